// A stand-in for the source fragments' worker in tests of remote-share-worker.ts: it speaks the
// worker side of the protocol (answers posted on the port, then the signal word bumped) and answers
// each commit with a batch whose bytes are the JSON of the ranges it got in that epoch, so a test
// sees exactly which units the leader's side generated itself.
import { workerData } from 'node:worker_threads';

const { port, signal } = workerData;
const word = new Int32Array(signal);
let open = [];

function answer(message, transfer = []) {
  port.postMessage(message, transfer);
  Atomics.add(word, 0, 1);
  Atomics.notify(word, 0);
}

port.on('message', (message) => {
  if (message.t === 'ranges') open.push(...message.ranges);
  else if (message.t === 'abort') open = [];
  else if (message.t === 'commit') {
    const bytes = new TextEncoder().encode(JSON.stringify({ by: 'leader', epoch: message.epoch, ranges: open }));
    open = [];
    answer({ t: 'batch', bytes: bytes.buffer, length: bytes.length, rows: 0, errors: [] }, [bytes.buffer]);
  } else if (message.t === 'close') port.close();
});
process.on('exit', () => {
  Atomics.store(word, 1, 1);
  Atomics.notify(word, 0);
});
