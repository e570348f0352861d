// What the remote-share tests of this folder share: the leader's node rows, a wait with a deadline,
// the datagen source both views read, the view's highest id, and the check of a view against its
// recomputation, and the keyed-share tests' groups, their join, EXPLAIN ANALYZE and the check of
// both keyed views (kv over t, ju over t join u) against their recomputation.
import pg from 'pg';
import { expect } from 'vitest';
import type { OxbowServer } from '../support/server.js';
import type { ClusterNodes } from './nodes.js';
import { connect, connectWhenServing } from './sessions.js';

export interface NodeRow {
  node_id: string;
  address: string;
  role: string;
  share_address: string | null;
  share_units: string | null;
}

export async function nodes(leader: pg.Client): Promise<NodeRow[]> {
  return (await leader.query<NodeRow>('select node_id, address, role, share_address, share_units from oxbow_catalog.nodes order by node_id')).rows;
}

/**
 * `probe` every 200 ms until it gives a value; past `timeoutMs`, or when the probe fails (a node's
 * session dropped: its process exited), an error saying what with the nodes' `stderr()`.
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, stderr: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let value: T | undefined;
    try {
      value = await probe();
    } catch (error) {
      throw new Error(`${what}: ${error instanceof Error ? error.message : String(error)}\n${stderr()}`, { cause: error });
    }
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms\n${stderr()}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
}

export const GEN = (name: string) =>
  `create source ${name} (id int8, v int, name varchar) with (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '100000000', fields.v.min = '0', fields.v.max = '999999', fields.v.seed = '7', fields.name.length = '6', datagen.rows.per.second = '4000', datagen.split.num = '2')`;

/** The view's highest id: a cheap probe for a wait, where checkView would read every row of both views. */
export async function viewMax(leader: pg.Client): Promise<number> {
  return Number((await leader.query<{ max: string | null }>('select max(id) as max from v')).rows[0]?.max ?? 0);
}

/** Every id from 1 to max once, w = 3 id + 1, and the rows up to the check view's max equal its rows. */
export async function checkView(leader: pg.Client): Promise<{ max: number; count: number }> {
  // One statement: one snapshot of both views.
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
  // Every number once: sorted ids are exactly 1..max.
  const gaps = view.filter((row, index) => row.id !== index + 1).slice(0, 5);
  expect(gaps).toEqual([]);
  expect(view.filter((row) => row.w !== 3 * row.id + 1).slice(0, 5)).toEqual([]);
  const upTo = Math.min(max, check.size);
  let compared = 0;
  for (const row of view) {
    if (row.id > upTo) break;
    expect(check.has(row.id)).toBe(true);
    if (check.get(row.id) !== row.v) expect({ id: row.id, v: row.v }).toEqual({ id: row.id, v: check.get(row.id) });
    compared++;
  }
  expect(compared).toBe(upTo);
  return { max, count: view.length };
}

/** A group of the keyed-share tests' views: its key, count and sum. */
export interface Group {
  k: number;
  n: string;
  s: string;
}

/** The groups of the rows whose `src` is `src`, by key (rows of several sources read in one statement). */
export function groupsOf(rows: readonly (Group & { src: string })[], src: string): Group[] {
  return rows
    .filter((row) => row.src === src)
    .map((row) => ({ k: Number(row.k), n: String(row.n), s: String(row.s) }))
    .sort((left, right) => left.k - right.k);
}

/** The join the keyed-share tests' view `ju` is made of, also their batch recomputation of it. */
export const JOIN_BATCH = 'select t.k, count(*) as n, sum(t.v + u.w) as s from t join u on t.k = u.k group by t.k';

/**
 * Tables t and u and the keyed-share tests' views over them: kv (`select k, count(*), sum(v) from
 * t group by k`) and ju (JOIN_BATCH); then, with `rows`, `t` rows of t and `u` of u, row g in
 * group g % `groups` with v (w) = g.
 */
export async function keyedViews(leader: pg.Client, rows?: { readonly groups: number; readonly t: number; readonly u: number }): Promise<void> {
  await leader.query('create table t (id int8 primary key, k int, v int8)');
  await leader.query('create table u (id int8 primary key, k int, w int8)');
  await leader.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
  await leader.query(`create materialized view ju as ${JOIN_BATCH}`);
  if (rows === undefined) return;
  await leader.query(`insert into t select g, g % ${rows.groups}, g from generate_series(1, ${rows.t}) g`);
  await leader.query(`insert into u select g, g % ${rows.groups}, g from generate_series(1, ${rows.u}) g`);
}

/** EXPLAIN ANALYZE of a view, as one text. */
export async function explain(leader: pg.Client, view = 'kv'): Promise<string> {
  return (await leader.query({ text: `explain analyze ${view}`, rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
}

/**
 * Table t with two rows of each of `groups` groups and the view kv (`select k, count(*), sum(v)
 * from t group by k`) over it; `writeAll` writes every row (every group read and written by its
 * owner of the moment), `nextRound` numbers other writes' values so no two rounds write the same.
 */
export async function groupedView(leader: pg.Client, groups: number): Promise<{ writeAll: () => Promise<void>; nextRound: () => number }> {
  await leader.query('create table t (id int8 primary key, k int, v int8)');
  await leader.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
  await leader.query(`insert into t select g, g % ${groups}, g from generate_series(1, ${2 * groups}) g`);
  let round = 0;
  const nextRound = () => ++round;
  const writeAll = async () => {
    const now = nextRound();
    await leader.query(`update t set v = v + ${now} where id % 2 = ${now % 2}`);
    await leader.query(`update t set v = v + 1 where id % 2 = ${(now + 1) % 2}`);
  };
  return { writeAll, nextRound };
}

/** Waits until the view kv (`select k, count(*), sum(v) from t group by k`) equals the batch SELECT of its query, then checks it and its `groups` groups. */
export async function expectKvEqual(leader: pg.Client, groups: number, stderr: () => string): Promise<void> {
  const compare = async () => {
    const rows = (await leader.query<Group & { src: string }>(`select 'v' as src, k, n, s from kv union all select 'b' as src, k, count(*) as n, sum(v) as s from t group by k`)).rows;
    return { view: groupsOf(rows, 'v'), batch: groupsOf(rows, 'b') };
  };
  const settled = await until('the view never equalled its recomputation', async () => {
    const { view, batch } = await compare();
    return JSON.stringify(view) === JSON.stringify(batch) ? { view, batch } : undefined;
  }, 60_000, stderr);
  expect(settled.view).toEqual(settled.batch);
  expect(settled.view.length).toBe(groups);
}

/** Waits until the keyed views kv and ju equal the batch SELECTs of their queries, then checks them. */
export async function expectKeyedViewsEqual(leader: pg.Client, stderr: () => string): Promise<void> {
  const compare = async () => {
    const rows = (
      await leader.query<Group & { src: string }>(
        `select 'v' as src, k, n, s from kv union all select 'b' as src, k, count(*) as n, sum(v) as s from t group by k
         union all select 'jv' as src, k + 100000, n, s from ju union all select 'jb' as src, k + 100000, n, s from (${JOIN_BATCH}) as b`,
      )
    ).rows;
    return { view: [...groupsOf(rows, 'v'), ...groupsOf(rows, 'jv')], batch: [...groupsOf(rows, 'b'), ...groupsOf(rows, 'jb')] };
  };
  const settled = await until(
    'the view never equalled its recomputation',
    async () => {
      const { view, batch } = await compare();
      return JSON.stringify(view) === JSON.stringify(batch) ? { view, batch } : undefined;
    },
    60_000,
    stderr,
  );
  expect(settled.view).toEqual(settled.batch);
  expect(settled.view.length).toBeGreaterThan(0);
}

/** The node of `candidates` serving as leader, with a session on it (after the leader stopped). */
export async function newLeader(candidates: readonly OxbowServer[], stderr: () => string): Promise<{ node: OxbowServer; client: pg.Client }> {
  return until(
    'no standby took over',
    async () => {
      for (const node of candidates) {
        const client = await connect(node).catch(() => undefined);
        if (client === undefined) continue;
        const self = (await client.query<{ role: string }>('select role from oxbow_catalog.nodes where is_self').catch(() => ({ rows: [] as { role: string }[] }))).rows[0];
        if (self?.role === 'leader') return { node, client };
        await client.end().catch(() => undefined);
      }
      return undefined;
    },
    60_000,
    stderr,
  );
}

/** Three nodes of `cluster`: a the leader (with a session, `first`), b and c standbys whose share addresses the leader lists. */
export async function threeNodesWithShares(cluster: ClusterNodes): Promise<{ a: OxbowServer; b: OxbowServer; c: OxbowServer; first: pg.Client; stderr: () => string }> {
  const a = await cluster.startNode('a');
  const first = await connectWhenServing(a);
  const b = await cluster.startNode('b');
  const c = await cluster.startNode('c');
  const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}\n--- c ---\n${c.stderr()}`;
  await until(
    'the standbys never listed their share addresses',
    async () => ((await nodes(first)).filter((row) => row.role === 'standby' && row.share_address !== null).length === 2 ? true : undefined),
    30_000,
    stderr,
  );
  return { a, b, c, first, stderr };
}
