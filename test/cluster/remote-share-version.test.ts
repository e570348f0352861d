// A node of another share protocol version in the cluster (a rolling upgrade): three real oxbow
// nodes on a real etcd at --parallelism 2 with --remote-shares on, node c started with
// OXBOW_REMOTE_SHARE_PROTOCOL_VERSION naming the version before this build's, as a node of the
// previous release records it.
//
// - the leader's oxbow_catalog.nodes shows each node's share_protocol: the leader's and b's this
//   build's, c's the one it was started with;
// - a source fragment's view and a keyed fragment's views (a GROUP BY, a join) are split between
//   the leader's threads and b only (EXPLAIN ANALYZE: 1 other node); b's share_units and
//   share_rows grow, c's stay null: c got no share, so no link to it failed over either;
// - the leader says once that c gets no share and why; c's share server saw no connection;
// - the views equal their recomputation (every datagen id once, the groups and the join equal
//   their batch SELECTs after rounds of inserts, updates and deletes).

import { describe, expect, it } from 'vitest';
import { SHARE_PROTOCOL_VERSION } from '../../executor/cluster/remote-share-link.js';
import { clusterNodes } from './nodes.js';
import { checkView, expectKeyedViewsEqual, explain, GEN, keyedViews, until, viewMax } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-share-version-', {
  // No node's lease needs to expire here.
  OXBOW_CLUSTER_LEASE_TTL_S: '10',
  OXBOW_PARALLELISM: '2',
  // Views over the source and the tables run as fragments at 2 workers on any machine.
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
});

const OLDER = SHARE_PROTOCOL_VERSION - 1;

interface VersionRow {
  node_id: string;
  address: string;
  share_address: string | null;
  share_protocol: number | null;
  share_units: string | null;
  share_rows: string | null;
}

describe('nodes of another share protocol version', () => {
  it('get no share: their vnodes and units run on the leader, said once, and the views equal their recomputation', async () => {
    expect(OLDER).toBeGreaterThanOrEqual(1);
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    const b = await cluster.startNode('b');
    const c = await cluster.startNode('c', { OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: String(OLDER) });
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}\n--- c ---\n${c.stderr()}`;
    const rows = async () =>
      (await leader.query<VersionRow>('select node_id, address, share_address, share_protocol, share_units, share_rows from oxbow_catalog.nodes order by node_id')).rows;
    const listed = await until(
      'the leader never listed both standbys with their share addresses',
      async () => {
        const all = await rows();
        return all.filter((row) => row.share_address !== null).length === 3 ? all : undefined;
      },
      30_000,
      stderr,
    );
    const byPort = (port: number) => listed.find((row) => row.address.endsWith(`:${port}`))!;
    const [rowA, rowB, rowC] = [byPort(a.port), byPort(b.port), byPort(c.port)];
    expect([rowA.share_protocol, rowB.share_protocol, rowC.share_protocol]).toEqual([SHARE_PROTOCOL_VERSION, SHARE_PROTOCOL_VERSION, OLDER]);
    const of = async (id: string) => (await rows()).find((row) => row.node_id === id)!;

    await leader.query(GEN('gen'));
    await leader.query(GEN('gen_check'));
    await leader.query('create materialized view v as select id, v, id * 3 + 1 as w from gen');
    await leader.query('create materialized view v_check as select id, v, count(*) as n from gen_check group by id, v');
    await keyedViews(leader);
    expect(await explain(leader, 'v')).toMatch(/StreamSourceFragment gen split across 2 workers and 1 other node: \d+ units/);
    expect(await explain(leader, 'kv')).toMatch(/StreamExchange dist by \(k\) to 2 workers and 1 other node/);
    expect(await explain(leader, 'ju')).toMatch(/to 2 workers and 1 other node/);

    let inserted = 0;
    const round = async (size: number, update: boolean): Promise<void> => {
      await leader.query(`insert into t select g, g % 97, g from generate_series(${inserted + 1}, ${inserted + size}) g`);
      await leader.query(`insert into u select g, g % 53, g from generate_series(${inserted + 1}, ${inserted + size / 4}) g`);
      inserted += size;
      if (update) {
        await leader.query(`update t set k = (k + 5) % 97, v = v + 1 where id % 13 = ${inserted % 13}`);
        await leader.query(`delete from u where id % 7 = ${inserted % 7}`);
      }
    };
    for (let step = 0; step < 4; step++) await round(1000, step % 2 === 1);
    await expectKeyedViewsEqual(leader, stderr);
    await until('node b generated no units and processed no rows', async () => {
      const row = await of(rowB.node_id);
      return Number(row.share_units ?? 0) >= 1500 && Number(row.share_rows ?? 0) > 0 ? true : undefined;
    }, 60_000, stderr);
    await until('the view never held 3000 rows', async () => ((await viewMax(leader)) >= 3000 ? true : undefined), 60_000, stderr);
    for (let step = 0; step < 3; step++) await round(1000, true);
    await expectKeyedViewsEqual(leader, stderr);
    const view = await checkView(leader);
    expect(view.count).toBe(view.max);

    // Node c got no share: nothing counted for it, no link to it failed, nor did it see one.
    const last = await of(rowC.node_id);
    expect([last.share_units, last.share_rows]).toEqual([null, null]);
    expect(await explain(leader, 'v')).toMatch(/split across 2 workers and 1 other node/);
    const said = a.stderr().split('\n').filter((line) => line.includes(`node ${rowC.node_id} (${rowC.share_address}) speaks share protocol version ${OLDER} and this leader version ${SHARE_PROTOCOL_VERSION}: it gets no remote share`));
    expect(said).toHaveLength(1);
    expect(a.stderr()).not.toMatch(/share on node .* failed/);
    expect(c.stderr()).not.toMatch(/remote share connection|keyed share/);
    await leader.end();
  }, 240_000);
});
