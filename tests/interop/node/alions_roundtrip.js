'use strict';
// Sends COUNT messages with keys and tags through ali-ons (a pure JavaScript RocketMQ
// client), consumes them back with its push consumer, prints one JSON line and exits.
// Usage: node alions_roundtrip.js NAMESRV TOPIC GROUP COUNT [MODE] [DEADLINE_MS]
//   MODE: both (default), produce, consume
const { Producer, Consumer, Message } = require('ali-ons');

const [nameSrv, topic, group, countText, mode = 'both', deadlineText = '90000'] =
  process.argv.slice(2);
const count = Number(countText);
const deadline = Date.now() + Number(deadlineText);
const common = { httpclient: {}, nameSrv, clientIP: '127.0.0.1' };
const quiet = { info() {}, warn() {}, error() {}, debug() {} };

function finish(result, code) {
  // Writes to a pipe are asynchronous: exit only once the whole line is out, or a result
  // over the pipe's 64 KiB buffer is cut short.
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(code));
}

async function produce() {
  // A send gives up after sendMsgTimeout (+1 s) whatever its retries: CI hosts stall for
  // seconds at times, and the 3 s default failed a run.
  const producer = new Producer({
    ...common,
    producerGroup: `${group}_P`,
    sendMsgTimeout: 30000,
    logger: quiet,
  });
  await producer.ready();
  const sent = [];
  for (let i = 0; i < count; i++) {
    const msg = new Message(topic, i % 2 ? 'TagB' : 'TagA', Buffer.from(`alions-${i}`));
    msg.keys = [`key-${i}`];
    msg.properties.custom = `c${i}`;
    const result = await producer.send(msg);
    if (result.sendStatus !== 'SEND_OK') throw new Error(`send ${i}: ${result.sendStatus}`);
    sent.push(result.msgId);
  }
  await producer.close();
  return sent;
}

async function consume() {
  const consumer = new Consumer({
    ...common,
    consumerGroup: group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    logger: quiet,
  });
  const seen = new Map();
  let done;
  const all = new Promise(resolve => { done = resolve; });
  consumer.subscribe(topic, 'TagA || TagB', async msg => {
    const body = msg.body.toString();
    seen.set(body, { tags: msg.tags, keys: msg.keys, custom: msg.properties.custom });
    if (seen.size >= count) done();
  });
  await consumer.ready();
  const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
  await all;
  clearTimeout(timer);
  await consumer.close();
  return [...seen.entries()].map(([body, meta]) => ({ body, ...meta }));
}

(async () => {
  const result = {};
  if (mode === 'both' || mode === 'produce') result.sent = await produce();
  if (mode === 'both' || mode === 'consume') result.received = await consume();
  finish(result, 0);
})().catch(err => finish({ error: String(err && err.stack || err) }, 1));
