'use strict';
// An ali-ons push consumer that stays online until STOP_FILE exists or DEADLINE_MS pass,
// so a test can ask the broker about it meanwhile; prints one JSON line and exits.
// Usage: node alions_idle_consumer.js NAMESRV TOPIC GROUP STOP_FILE DEADLINE_MS
const fs = require('fs');
const { Consumer } = require('ali-ons');

const [nameSrv, topic, group, stopFile, deadlineText] = process.argv.slice(2);
const deadline = Date.now() + Number(deadlineText);
const quiet = { info() {}, warn() {}, error() {}, debug() {} };

function finish(result, code) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(code));
}

(async () => {
  const consumer = new Consumer({
    httpclient: {}, nameSrv, clientIP: '127.0.0.1', consumerGroup: group, logger: quiet,
  });
  consumer.subscribe(topic, '*', async () => {});
  await consumer.ready();
  while (!fs.existsSync(stopFile) && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  await consumer.close();
  finish({ stopped: true }, 0);
})().catch(err => finish({ error: String(err && err.stack || err) }, 1));
