// Remote shares follow the cluster's membership (--remote-shares on): real oxbow nodes on a real
// etcd at --parallelism 2, the view built while the leader is alone.
//
// - a node that joins takes a share of the running view between two chunks: its share_units grow
//   and the fragment's unit count goes on from where it was (the view was not rebuilt);
// - that node drained (SIGTERM): its record goes, the leader gives it no more ranges and closes
//   its share once every commit it was sent is answered: no share fails, no epoch fails;
// - the node started again (another share port): it takes a share again;
// - throughout, the view holds every number of the datagen sequence once, and its rows equal those
//   of a second source of the same definition aggregated on the leader's main thread.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-share-membership-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_REMOTE_SHARES: 'on',
});

interface NodeRow {
  node_id: string;
  address: string;
  role: string;
  share_address: string | null;
  share_units: string | null;
}

async function nodes(leader: pg.Client): Promise<NodeRow[]> {
  return (await leader.query<NodeRow>('select node_id, address, role, share_address, share_units from oxbow_catalog.nodes order by node_id')).rows;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, stderr: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms\n${stderr()}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
}

const GEN = (name: string) =>
  `create source ${name} (id int8, v int, name varchar) with (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '100000000', fields.v.min = '0', fields.v.max = '999999', fields.v.seed = '7', fields.name.length = '6', datagen.rows.per.second = '4000', datagen.split.num = '2')`;

/** Every id from 1 to max once, w = 3 id + 1, and the rows up to the check view's max equal its rows. */
async function checkView(leader: pg.Client): Promise<{ max: number; count: number }> {
  const rows = (
    await leader.query<{ src: string; id: string; v: number; w: string; n: string }>(
      `select 'v' as src, id, v, w, 1::int8 as n from v union all select 'c' as src, id, v, 0::int8 as w, n from v_check`,
    )
  ).rows;
  const view = rows.filter((row) => row.src === 'v').map((row) => ({ id: Number(row.id), v: row.v, w: Number(row.w) }));
  const check = new Map<number, number>();
  for (const row of rows) {
    if (row.src !== 'c') continue;
    expect(Number(row.n)).toBe(1);
    check.set(Number(row.id), row.v);
  }
  view.sort((left, right) => left.id - right.id);
  const max = view.length === 0 ? 0 : view[view.length - 1]!.id;
  expect(view.filter((row, index) => row.id !== index + 1).slice(0, 5)).toEqual([]);
  expect(view.filter((row) => row.w !== 3 * row.id + 1).slice(0, 5)).toEqual([]);
  const upTo = Math.min(max, check.size);
  let compared = 0;
  for (const row of view) {
    if (row.id > upTo) break;
    if (check.get(row.id) !== row.v) expect({ id: row.id, v: row.v }).toEqual({ id: row.id, v: check.get(row.id) });
    compared++;
  }
  expect(compared).toBe(upTo);
  return { max, count: view.length };
}

/** The fragment's units and the other nodes it runs shares on, from EXPLAIN ANALYZE. */
async function fragment(leader: pg.Client): Promise<{ units: number; others: number }> {
  const text = (await leader.query({ text: 'explain analyze v', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
  const match = /StreamSourceFragment gen split across 2 workers(?: and (\d+) other nodes?)?: (\d+) units/.exec(text);
  expect(match, text).not.toBeNull();
  return { units: Number(match![2]), others: Number(match![1] ?? 0) };
}

describe('remote shares follow the membership', () => {
  it('a node that joins takes a share of a running view, hands it back when drained, and takes one again when it returns', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await leader.query(GEN('gen'));
    await leader.query(GEN('gen_check'));
    await leader.query('create materialized view v as select id, v, id * 3 + 1 as w from gen');
    await leader.query('create materialized view v_check as select id, v, count(*) as n from gen_check group by id, v');
    let b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    const alone = await fragment(leader);
    expect(alone.others).toBe(0);

    const bId = await until(
      'node b never listed its share address on the leader',
      async () => (await nodes(leader)).find((row) => row.role === 'standby' && row.share_address !== null)?.node_id,
      30_000,
      stderr,
    );
    const unitsOf = async () => Number((await nodes(leader)).find((row) => row.node_id === bId)?.share_units ?? 0);
    await until('node b generated no units', async () => ((await unitsOf()) >= 1500 ? true : undefined), 60_000, stderr);
    const joined = await fragment(leader);
    expect(joined.others).toBe(1);
    // The same fragment: its units went on from where they were.
    expect(joined.units).toBeGreaterThan(alone.units);
    const withB = await checkView(leader);

    // Drained: the leader's share of b closes once answered; nothing fails.
    await b.kill('SIGTERM');
    expect(b.process.exitCode).toBe(0);
    const drained = await until(
      'the leader kept a share on the drained node',
      async () => ((await fragment(leader)).others === 0 ? await unitsOf() : undefined),
      30_000,
      stderr,
    );
    const afterDrain = await checkView(leader);
    expect(afterDrain.max).toBeGreaterThanOrEqual(withB.max);
    await until('the view did not grow after the drain', async () => ((await checkView(leader)).max > afterDrain.max + 4000 ? true : undefined), 60_000, stderr);
    expect(await unitsOf()).toBe(drained);

    // Back: another run of the node (a new share port) takes a share again.
    b = await cluster.startNode('b');
    await until('node b took no share again', async () => ((await unitsOf()) >= drained + 1500 ? true : undefined), 60_000, stderr);
    await until('the fragment does not list node b again', async () => ((await fragment(leader)).others === 1 ? true : undefined), 30_000, stderr);
    const end = await checkView(leader);
    expect(end.count).toBe(end.max);
    expect(end.max).toBeGreaterThan(afterDrain.max + 4000);

    // No share was given up; an epoch whose write failed would have stopped the store's commits,
    // and the view grew after the drain and after the return.
    expect(a.stderr()).not.toMatch(/the remote share on node .* failed/);
    await leader.end();
  }, 240_000);
});
