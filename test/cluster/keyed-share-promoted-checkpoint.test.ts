// The first build on a promoted leader takes its keyed shares from the nodes' checkpoints
// (executor/cluster/README.md, "Keyed shares"): three real oxbow nodes on a real etcd at
// --parallelism 2, checkpoints to a folder. A GROUP BY and a join are built while both standbys
// are listed and rows go through them; the leader is stopped cleanly (its last checkpoint holds
// every group, and both standbys follow it).
//
// - The standby that takes over builds the fragments with recovered state on its threads alone and
//   cuts their owners once its checkpoints run: the other standby makes each share's store from the
//   checkpoint it follows (the new leader's log: no seed read, its store from its checkpoint); no
//   seed is read or sent whole at the build;
// - rounds of inserts, updates and deletes after the promotion: each view equals the batch SELECT
//   of its query, so every group the node owns went on from the checkpoint's state, and the node
//   processed rows.

import { describe, expect, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { expectKeyedViewsEqual, explain, keyedViews, newLeader, nodes, threeNodesWithShares, until } from './remote-share-views.js';

const cluster = clusterNodes('oxbow-keyed-share-promoted-checkpoint-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
});

describe("a promoted leader's keyed shares", () => {
  it("are made from the checkpoint the nodes followed, and the nodes' groups go on from it", async () => {
    const { a, b, c, first, stderr } = await threeNodesWithShares(cluster);
    await keyedViews(first);
    expect(await explain(first, 'kv')).toMatch(/to 2 workers and 2 other nodes/);
    await first.query('insert into t select g, g % 1009, g from generate_series(1, 8000) g');
    await first.query('update t set k = (k + 5) % 1009, v = v + 1 where id % 13 = 3');
    await first.query('delete from t where k % 50 = 7');
    await first.query('insert into u select g, g % 211, g from generate_series(1, 900) g');
    await first.query('delete from u where id % 7 = 1');
    await expectKeyedViewsEqual(first, stderr);
    await first.end();

    // A clean stop: the last checkpoint holds every group; the lease goes at once.
    await a.stop();
    const { node, client: leader } = await newLeader([b, c], stderr);
    const other = node === b ? c : b;
    const otherId = await until(
      'the other standby is not listed on the new leader',
      async () => (await nodes(leader)).find((row) => row.role === 'standby' && row.address === `${other.host}:${other.port}`)?.node_id,
      30_000,
      stderr,
    );
    const cuts = () => [...node.stderr().matchAll(new RegExp(`cut its vnodes again[^\\n]*node ${otherId} took vnodes[^\\n]*`, 'g'))].map((match) => match[0]);
    await until('the new leader never gave the other node its shares', async () => (cuts().length >= 2 ? true : undefined), 60_000, stderr);
    for (const cut of cuts()) {
      expect(cut).toMatch(new RegExp(`no seed read, stores made from checkpoints in \\d+ ms while the owners ran, 1 of 1 seed sent ahead \\(node ${otherId}'s from its checkpoint \\d+\\)`));
    }
    for (const view of ['kv', 'ju']) expect(await explain(leader, view)).toMatch(/to 2 workers and 1 other node, vnodes cut again 1 time/);
    expect(other.stderr()).toMatch(/a keyed share's store is made from checkpoint \d+/);

    // The node's groups go on from its checkpoint's state.
    await expectKeyedViewsEqual(leader, stderr);
    let next = 8000;
    for (let step = 0; step < 3; step++) {
      await leader.query(`insert into t select g, g % 1009, g * 7 % 1000 from generate_series(${next + 1}, ${next + 1500}) g`);
      next += 1500;
      await leader.query(`update t set k = (k + 3) % 1009, v = v + 2 where id % 17 = ${step}`);
      await leader.query(`delete from t where id % 31 = ${step}`);
      await leader.query(`insert into u select g, g % 211, g from generate_series(${1000 + step * 100}, ${1099 + step * 100}) g`);
      await leader.query(`update u set k = (k + 1) % 211 where id % 11 = ${step}`);
      await expectKeyedViewsEqual(leader, stderr);
    }
    const shareRows = Number((await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [otherId])).rows[0]?.share_rows ?? 0);
    expect(shareRows).toBeGreaterThan(0);
    expect(node.stderr()).not.toMatch(/the keyed share on node .* failed|could not be seeded/);
    await leader.end();
  }, 240_000);
});
