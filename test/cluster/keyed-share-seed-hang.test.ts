// A node that stops in the middle of writing a keyed share's seed sent whole at `open` is still
// given up (executor/cluster/README.md, "Keyed shares": the seed's deadline runs from its last
// progress): three real oxbow nodes on a real etcd at --parallelism 2, the answer deadline at 3 s,
// the leases at 10 s (so the seed's deadline, not the node's lease, notices first), the seed in
// 4 KiB frames and each piece written 300 ms late on the node, so the join view's seed takes the
// node over ten seconds.
//
// - a GROUP BY and a join grouped by its key, built with shares on both standbys, hold state; the
//   leader stops cleanly and the new leader builds the fragments again with one share on the other
//   standby, seeded whole at `open`; the standby is SIGSTOPped at once, while it writes;
// - the new leader gives that share up for no progress of its seed and runs it itself: writes go
//   on and each view equals the batch SELECT of its query.

import { describe, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { expectKeyedViewsEqual, keyedViews, newLeader, nodes, threeNodesWithShares, until } from './remote-share-views.js';

const TIMEOUT_MS = 3000;
const DELAY_MS = 300;

const cluster = clusterNodes('oxbow-keyed-share-seed-hang-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '10',
  OXBOW_PARALLELISM: '2',
  OXBOW_REMOTE_SHARES: 'on',
  // The new leader reads the seeds at the build and sends each whole at `open` (from the nodes'
  // checkpoints, the default, no seed crosses at all).
  OXBOW_KEYED_SEED_FROM: 'read',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: String(TIMEOUT_MS),
  OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '4096',
  OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: String(DELAY_MS),
});


describe("a keyed share's seed sent whole at open", () => {
  it('is given up when the node stops making progress on it, and the leader runs the share', async () => {
    const { a, b, c, first, stderr } = await threeNodesWithShares(cluster);
    await keyedViews(first);
    await first.query('insert into t select g, g % 401, g from generate_series(1, 6000) g');
    await first.query('insert into u select g, g % 211, g from generate_series(1, 900) g');
    await expectKeyedViewsEqual(first, stderr);
    await first.end();

    const written = () => [...b.stderr().matchAll(/a keyed share's seed is written/g)].length + [...c.stderr().matchAll(/a keyed share's seed is written/g)].length;
    const earlier = written();
    await a.stop();
    const { node, client: leader } = await newLeader([b, c], stderr);
    const other = node === b ? c : b;
    const otherId = await until(
      'the other standby is not listed on the new leader',
      async () => (await nodes(leader)).find((row) => row.role === 'standby' && row.address === `${other.host}:${other.port}`)?.node_id,
      30_000,
      stderr,
    );
    // The group view's seed (a few pieces) is written; the join's (over thirty) is being written: the node stops then.
    await until('the other standby never wrote the group view\'s seed', async () => (written() > earlier ? true : undefined), 60_000, stderr);
    await other.kill('SIGSTOP');
    try {
      await leader.query('insert into t select g, g % 401, g * 7 % 1000 from generate_series(6001, 9000) g');
      await until(
        'the new leader never gave the stopped node\'s share up',
        async () => (new RegExp(`the keyed share on node ${otherId} \\(\\S+\\) failed: no progress of its seed within ${TIMEOUT_MS} ms; its share runs on this node from now on`).test(node.stderr()) ? true : undefined),
        60_000,
        stderr,
      );
      await leader.query('update t set v = v + 3 where id % 7 = 2');
      await leader.query('delete from t where id % 19 = 4');
      await leader.query('update u set w = w + 1');
      await expectKeyedViewsEqual(leader, stderr);
    } finally {
      await other.kill('SIGCONT');
    }
    await leader.end();
  }, 240_000);
});
