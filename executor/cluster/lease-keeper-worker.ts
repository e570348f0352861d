// The worker thread of lease-keeper.ts: an etcd client of its own that grants the node's lease and
// keeps it alive (etcd3's keep-alive stream, a keep-alive every third of the TTL) on this thread's
// event loop, so a statement that blocks the main thread does not let the lease expire. Each
// confirmation's time goes into shared memory, which the main thread reads without a message (a
// blocked main thread reads it current the moment it runs again). When the main thread's
// heartbeat (also in shared memory) is older than the stall bound, the lease is given up: a
// process that stopped running statements must not hold leadership forever.

import { parentPort, workerData } from 'node:worker_threads';
import { Etcd3, type Lease } from 'etcd3';
import { HEARTBEAT_SLOT, RENEWED_SLOT, type KeeperRequest, type KeeperEvent, type KeeperWorkerData } from './lease-keeper.js';

const data = workerData as KeeperWorkerData;
const shared = new BigInt64Array(data.shared);
const port = parentPort!;
const client = new Etcd3({
  hosts: [...data.endpoints],
  dialTimeout: data.callTimeoutMs,
  defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + data.callTimeoutMs }),
});
let lease: Lease | undefined;

const post = (event: KeeperEvent): void => port.postMessage(event);

function dropLease(): void {
  lease?.release();
  lease = undefined;
}

async function grant(requestId: number): Promise<void> {
  dropLease();
  const current = client.lease(data.leaseTtlSeconds);
  lease = current;
  current.on('lost', (error: Error) => {
    if (lease !== current) return;
    lease = undefined;
    post({ type: 'lost', message: error.message });
  });
  current.on('keepaliveSucceeded', () => {
    if (lease === current) Atomics.store(shared, RENEWED_SLOT, BigInt(Date.now()));
  });
  const requestedAt = Date.now();
  try {
    const id = await current.grant();
    Atomics.store(shared, RENEWED_SLOT, BigInt(requestedAt));
    post({ type: 'granted', requestId, id });
  } catch (error) {
    if (lease === current) lease = undefined;
    post({ type: 'failed', requestId, message: error instanceof Error ? error.message : String(error) });
  }
}

async function revoke(requestId: number): Promise<void> {
  const current = lease;
  lease = undefined;
  try {
    await current?.revoke();
    post({ type: 'done', requestId });
  } catch (error) {
    post({ type: 'failed', requestId, message: error instanceof Error ? error.message : String(error) });
  }
}

// The stall bound: the main thread writes its heartbeat every 100 ms while it runs.
setInterval(() => {
  if (lease === undefined) return;
  const silentMs = Date.now() - Number(Atomics.load(shared, HEARTBEAT_SLOT));
  if (silentMs <= data.stallMs) return;
  dropLease();
  post({ type: 'lost', message: `the main thread has not run for ${silentMs} ms (more than ${data.stallMs} ms): the lease is given up` });
}, 100);

port.on('message', (request: KeeperRequest) => {
  switch (request.type) {
    case 'grant':
      void grant(request.requestId);
      break;
    case 'revoke':
      void revoke(request.requestId);
      break;
    case 'close':
      dropLease();
      client.close();
      process.exit(0);
  }
});
