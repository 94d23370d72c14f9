'use strict';
// ali-ons signing its requests (accessKey/secretKey) for a broker with aclEnable=true.
// Usage: node alions_acl.js NAMESRV TOPIC DENIED_TOPIC GROUP DENIED_GROUP COUNT ACCESS SECRET
// Sends COUNT messages to TOPIC, then one to DENIED_TOPIC (its error kept); consumes TOPIC
// in GROUP until all COUNT arrived (at most 60 s), then in DENIED_GROUP until the client
// reports an error or 10 s passed. Prints one JSON line {sent, denied_send, received,
// received_denied, denied_errors} and exits.
const { Producer, Consumer, Message } = require('ali-ons');

const [nameSrv, topic, deniedTopic, group, deniedGroup, countText, accessKey, secretKey] =
  process.argv.slice(2);
const count = Number(countText);
const common = { httpclient: {}, nameSrv, clientIP: '127.0.0.1', accessKey, secretKey };
const quiet = { info() {}, warn() {}, error() {}, debug() {} };

function finish(result, code) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(code));
}

async function produce() {
  const producer = new Producer({
    ...common,
    producerGroup: `${group}_P`,
    sendMsgTimeout: 30000,
    retryTimesWhenSendFailed: 0,
    logger: quiet,
  });
  await producer.ready();
  let sent = 0;
  for (let i = 0; i < count; i++) {
    const result = await producer.send(new Message(topic, 'TagA', Buffer.from(`acl-${i}`)));
    if (result.sendStatus !== 'SEND_OK') throw new Error(`send ${i}: ${result.sendStatus}`);
    sent += 1;
  }
  let deniedSend = null;
  try {
    await producer.send(new Message(deniedTopic, 'TagA', Buffer.from('denied')));
  } catch (err) {
    deniedSend = String(err && err.message || err);
  }
  await producer.close();
  return { sent, deniedSend };
}

// Distinct bodies received in consumerGroup: all COUNT, or what came before the end (the
// deadline, or the first error the client reports or its ready() rejects with, when
// stopOnError).
async function consume(consumerGroup, ms, stopOnError) {
  const consumer = new Consumer({
    ...common,
    consumerGroup,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    logger: quiet,
  });
  const seen = new Set();
  const errors = [];
  let done;
  const end = new Promise(resolve => { done = resolve; });
  const failed = err => {
    errors.push(String(err && err.message || err));
    if (stopOnError) done();
  };
  consumer.on('error', failed);
  consumer.subscribe(topic, '*', async msg => {
    seen.add(msg.body.toString());
    if (seen.size >= count) done();
  });
  const timer = setTimeout(done, ms);
  await Promise.race([consumer.ready().catch(failed), end]);
  await end;
  clearTimeout(timer);
  await consumer.close().catch(err => errors.push(String(err && err.message || err)));
  return { received: seen.size, errors };
}

(async () => {
  const { sent, deniedSend } = await produce();
  const allowed = await consume(group, 60000, false);
  const denied = await consume(deniedGroup, 10000, true);
  finish({
    sent,
    denied_send: deniedSend,
    received: allowed.received,
    received_denied: denied.received,
    denied_errors: denied.errors,
  }, 0);
})().catch(err => finish({ error: String(err && err.stack || err) }, 1));
