// Threads that take back vnodes they gave away are kept, their caches emptied
// (executor/cluster/README.md, "Membership"): a real oxbow leader at --parallelism 2 (--cores 8)
// on a real etcd with --remote-shares on, and nodes that join and are drained one after another.
// A GROUP BY view over 12,000 groups (more than an aggregate loads whole, so its groups are cached
// as read and written, and the row cache holds them) is written all over in every phase:
//
// - node b joins (the threads give it vnodes) and is drained: the threads take its vnodes, both
//   kept (started 0);
// - node c joins, its groups are written, and it is drained: each thread takes back vnodes it
//   held before it gave them to c, whose rows c changed meanwhile; both threads are kept, their
//   caches emptied: a thread answering from its caches as they were before it gave the vnode away
//   would count those groups from their rows of then;
// - after each phase the view equals the batch SELECT of its query.

import { describe, expect, it } from 'vitest';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKvEqual, explain, groupedView, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-keyed-share-regain-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
});

const GROUPS = 12_000;

describe('a keyed fragment whose threads take back vnodes', () => {
  it('keeps them running with their caches emptied, the view equal to its recomputation', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    let node: Awaited<ReturnType<typeof cluster.startNode>> | undefined;
    const stderr = () => `--- a ---\n${a.stderr()}${node === undefined ? '' : `\n--- node ---\n${node.stderr()}`}`;
    const { writeAll } = await groupedView(leader, GROUPS);
    await writeAll();
    await expectKvEqual(leader, GROUPS, stderr);

    let cuts = 0;
    for (const name of ['b', 'c']) {
      node = await cluster.startNode(name);
      await shareAddressListed(leader, node, stderr);
      cuts++;
      await until(`the view never took a share on node ${name}`, async () => (new RegExp(`to 2 workers and 1 other node, vnodes cut again ${cuts} times?`).test(await explain(leader)) ? true : undefined), 60_000, stderr);
      await writeAll();
      await expectKvEqual(leader, GROUPS, stderr);
      await node.kill('SIGTERM');
      cuts++;
      await until(`the view never cut its owners without node ${name}`, async () => (new RegExp(`to 2 workers, vnodes cut again ${cuts} times`).test(await explain(leader)) ? true : undefined), 60_000, stderr);
      await writeAll();
      await expectKvEqual(leader, GROUPS, stderr);
    }
    const drains = a.stderr().split('\n').filter((line) => line.includes('handed its vnodes back'));
    expect(drains.length, stderr()).toBe(2);
    for (const line of drains) expect(line).toMatch(/kept 2 owners running \(2 threads, 0 nodes' shares; 2 of them took vnodes(, [12] of those some they held before \(caches emptied\))?\), started 0/);
    // After c, both threads took back vnodes they had given it.
    expect(drains[1]).toMatch(/, 2 of those some they held before \(caches emptied\)\), started 0/);
    await leader.end();
  }, 240_000);
});
