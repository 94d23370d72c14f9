'use strict';
// Sends COUNT messages with properties a (0-9) and b (x or y), then a matching "end", through
// ali-ons; consumes them back with a SQL92 subscription until "end"; prints one JSON line.
// Usage: node alions_sql92.js NAMESRV TOPIC GROUP SQL COUNT DEADLINE_MS
const { Producer, Consumer, Message } = require('ali-ons');

const [nameSrv, topic, group, sql, countText, deadlineText] = process.argv.slice(2);
const count = Number(countText);
const deadline = Date.now() + Number(deadlineText);
const common = { httpclient: {}, nameSrv, clientIP: '127.0.0.1' };
const quiet = { info() {}, warn() {}, error() {}, debug() {} };

function finish(result, code) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(code));
}

async function produce() {
  const producer = new Producer({
    ...common, producerGroup: `${group}_P`, sendMsgTimeout: 30000, logger: quiet,
  });
  await producer.ready();
  const send = async (body, a, b) => {
    const msg = new Message(topic, 'TagA', Buffer.from(body));
    msg.properties.a = a;
    msg.properties.b = b;
    const result = await producer.send(msg);
    if (result.sendStatus !== 'SEND_OK') throw new Error(`send ${body}: ${result.sendStatus}`);
  };
  for (let i = 0; i < count; i++) await send(`m${i}`, String(i % 10), i % 4 ? 'x' : 'y');
  await send('end', '4', 'x');
  await producer.close();
}

async function consume() {
  const consumer = new Consumer({
    ...common, consumerGroup: group, consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET', logger: quiet,
  });
  const received = [];
  let done;
  const ended = new Promise(resolve => { done = resolve; });
  consumer.subscribe(topic, { expressionType: 'SQL92', subString: sql }, async msg => {
    const body = msg.body.toString();
    received.push(body);
    if (body === 'end') done();
  });
  await consumer.ready();
  const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
  await ended;
  clearTimeout(timer);
  await consumer.close();
  return received;
}

(async () => {
  await produce();
  finish({ received: await consume() }, 0);
})().catch(err => finish({ error: String(err && err.stack || err) }, 1));
