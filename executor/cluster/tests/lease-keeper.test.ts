// The lease keeper against a real etcd (test/support/etcd.ts), its main thread blocked for real
// (Atomics.wait stops this thread's event loop; the keeper's worker thread runs on):
// - blocked for three TTLs, the lease is alive afterwards (etcd says so) and the time of its last
//   confirmation, read from shared memory, is recent;
// - blocked for longer than the stall bound, the worker gives the lease up: etcd lets it expire
//   and the keeper reports it lost.
// Needs dist/ (the worker script): npm run build.

import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseKeeper } from '../lease-keeper.js';
import { startEtcd, type EtcdServer } from '../../../test/support/etcd.js';

let etcd: EtcdServer;
let client: Etcd3;

beforeAll(async () => {
  etcd = await startEtcd();
  client = new Etcd3({ hosts: [etcd.endpoint] });
});

afterAll(async () => {
  client?.close();
  await etcd?.stop();
});

/** Blocks this thread (its event loop included) for `ms`. */
function blockThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** etcd's remaining TTL of a lease in seconds; -1 once it expired. */
async function remainingTtl(id: string): Promise<number> {
  return Number((await client.leaseClient.leaseTimeToLive({ ID: id })).TTL);
}

const settle = () => new Promise((resolveWait) => setTimeout(resolveWait, 50));

describe('LeaseKeeper', () => {
  it('keeps the lease alive while the main thread is blocked for three TTLs', async () => {
    const keeper = new LeaseKeeper({ endpoints: [etcd.endpoint], leaseTtlSeconds: 2, callTimeoutMs: 2000 });
    const lost: string[] = [];
    keeper.onLost = (error) => void lost.push(error.message);
    try {
      const id = await keeper.grant();
      blockThread(6000);
      // Read before this thread handles any message: shared memory, current.
      const silentMs = Date.now() - keeper.renewedAt;
      expect(silentMs).toBeLessThan(1500);
      await settle();
      expect(await remainingTtl(id)).toBeGreaterThan(0);
      expect(lost).toEqual([]);
      await keeper.revoke();
      expect(await remainingTtl(id)).toBe(-1);
    } finally {
      keeper.close();
    }
  }, 30_000);

  it('gives the lease up when the main thread stalls past the bound', async () => {
    const keeper = new LeaseKeeper({ endpoints: [etcd.endpoint], leaseTtlSeconds: 2, callTimeoutMs: 2000, stallMs: 1000 });
    const lost: string[] = [];
    keeper.onLost = (error) => void lost.push(error.message);
    try {
      const id = await keeper.grant();
      blockThread(5000);
      // The last confirmation is from before the stall bound: older than the TTL by now.
      expect(Date.now() - keeper.renewedAt).toBeGreaterThan(2000);
      await settle();
      expect(lost.length).toBe(1);
      expect(lost[0]).toMatch(/the main thread has not run for \d+ ms \(more than 1000 ms\): the lease is given up/);
      expect(await remainingTtl(id)).toBe(-1);
    } finally {
      keeper.close();
    }
  }, 30_000);
});
