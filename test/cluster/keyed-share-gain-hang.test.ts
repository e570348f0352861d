// A kept keyed share whose node stops while it writes the vnodes it gains at a cut is given up
// (executor/cluster/README.md, "Membership": each piece of the `add` written answers `seeding`,
// which gives the relay's answer deadlines again, and nothing else does): three real oxbow nodes
// on a real etcd at --parallelism 2, the answer deadline at 3 s, the leases at 10 s, the seeds read
// by the leader (OXBOW_KEYED_SEED_FROM=read) in 4 KiB frames, each piece written 300 ms late on the
// node, so the gained vnodes take several seconds to write.
//
// - a GROUP BY and a join grouped by its key, built with shares on both standbys, hold state;
//   standby c is drained (SIGTERM) while writes go on: b's share, kept, takes some of c's vnodes,
//   their seed sent to b's running share piece by piece; b is SIGSTOPped as soon as the leader's
//   cut says so;
// - the leader gives b's share up for no answer within the deadline and runs it itself over its own
//   database, which holds every vnode: writes go on and each view equals the batch SELECT of its
//   query.

import { describe, expect, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { expectKeyedViewsEqual, keyedViews, nodes, threeNodesWithShares, until } from './remote-share-views.js';

const TIMEOUT_MS = 3000;
const DELAY_MS = 300;

const cluster = clusterNodes('oxbow-keyed-share-gain-hang-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '10',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_KEYED_SEED_FROM: 'read',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: String(TIMEOUT_MS),
  OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '4096',
  OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: String(DELAY_MS),
});

describe('a kept keyed share taking vnodes at a cut', () => {
  it('is given up when its node stops while it writes them, and the leader runs the share', async () => {
    const { a, b, c, first: leader, stderr } = await threeNodesWithShares(cluster);
    await keyedViews(leader);
    await leader.query('insert into t select g, g % 401, g from generate_series(1, 6000) g');
    await leader.query('insert into u select g, g % 211, g from generate_series(1, 900) g');
    await expectKeyedViewsEqual(leader, stderr);
    const listed = await nodes(leader);
    const idOf = (node: typeof b) => listed.find((row) => row.address === `${node.host}:${node.port}`)!.node_id;
    const [bId, cId] = [idOf(b), idOf(c)];
    for (const view of ['kv', 'ju']) {
      const analyzed = (await leader.query({ text: `explain analyze ${view}`, rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
      expect(analyzed).toMatch(/to 2 workers and 2 other nodes/);
    }

    let writing = true;
    let next = 6000;
    const writer = (async () => {
      while (writing) {
        await leader.query(`insert into t select g, g % 401, g % 1000 from generate_series(${next + 1}, ${next + 100}) g`);
        next += 100;
      }
    })();
    let stopped = false;
    try {
      const draining = c.kill('SIGTERM');
      // The cut that gives b some of c's vnodes: b is stopped while their seed is written to it.
      const cutSays = new RegExp(`node ${cId} handed its vnodes back[^\\n]*node ${bId} from the read, \\d+ bytes sent to its running share`);
      const deadline = Date.now() + 60_000;
      while (!cutSays.test(a.stderr())) {
        if (Date.now() > deadline) throw new Error(`no cut gave node b vnodes to write\n${stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      b.process.kill('SIGSTOP');
      stopped = true;
      await draining;
      await until(
        "the leader never gave the stopped node's share up",
        async () => (new RegExp(`the keyed share on node ${bId} \\(\\S+\\) failed: no answer to a \\w+ within ${TIMEOUT_MS} ms; its share runs on this node from now on`).test(a.stderr()) ? true : undefined),
        60_000,
        stderr,
      );
    } finally {
      writing = false;
      await writer;
    }
    try {
      // Node b never wrote all of them: the pieces written late are still coming when it stopped.
      expect(b.stderr()).not.toMatch(/a keyed share took vnodes it never held/);
      await leader.query('update t set v = v + 3 where id % 7 = 2');
      await leader.query('delete from t where id % 19 = 4');
      await leader.query('update u set w = w + 1');
      await expectKeyedViewsEqual(leader, stderr);
    } finally {
      if (stopped) b.process.kill('SIGCONT');
    }
    await leader.end();
  }, 240_000);
});
