// Temporal joins (`JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON ...`, executor/stream/temporal-join.ts)
// through the engine. Random statements change a table of bids and a side table; the test keeps its
// own model: the side table's content after every statement, and for each bid the side row its
// current version saw when it was written (or, for bids older than the view, when the view was
// created). After every statement the inner and the left view must equal that model: a bid's row
// carries the side value of its own moment, so later side changes leave it alone, a missing side
// row drops it (inner) or pads it with NULL (left), and a deleted or updated bid retracts exactly
// the row it had (a view grouping the join's rows by side value counts them). The right table is
// kept in memory (small) or read per batch (larger than the threshold, lowered here), at
// parallelism 1 and 2 (the grouped view's aggregate in worker threads: the build's worker script,
// npm run build first), and the run goes on across a restart on RocksDB. A join by a secondary index
// (its columns covered, not the primary key) is checked the same way: each bid joins every side row
// of its group as of its moment. Also: the errors for right sides a temporal join cannot look up,
// with SQLSTATE and position; ON equalities beyond the key, IS NOT DISTINCT FROM and other
// conditions (with the side table unchanged, the views equal the plain join recomputed by the batch
// executor); a batch SELECT with the clause is the plain join against the current table; EXPLAIN
// names the node. Over an append-only source the join only inserts: an aggregate above it keeps
// append-only state, a row_number() <= N above it is the group top-N, both equal to the plain join.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initParser } from '../../../sql/parser/index.js';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { seededRandom } from '../../../test/support/seeded-random.js';
import { temporalJoinDefaults } from '../temporal-join.js';
import { openHarness, type Harness } from './stream-harness.js';

beforeAll(async () => {
  await initParser();
});

const saved = { ...temporalJoinDefaults };
afterEach(() => Object.assign(temporalJoinDefaults, saved));

const KEYS = 12;
const INNER = 'select b.id, b.auction, b.price, s.value from bids b join side for system_time as of proctime() s on b.auction % 10 = s.key';
/** Over the join: a retraction that carried another side value than its insert would miscount. */
const GROUPED = `select value, count(*) as bids, sum(price) as total from (${INNER}) j group by value`;
const LEFT = 'select b.id, b.auction, b.price, s.value from bids as b left join side for system_time as of proctime() as s on b.auction % 10 = s.key';

interface Bid {
  auction: number;
  price: number;
  /** The side value the bid's version saw; undefined: no side row then. */
  value: string | undefined;
}

/** The test's own model of the side table, the bids and what each view must hold. */
class Model {
  readonly side = new Map<number, string>();
  readonly bids = new Map<number, Bid>();
  private nextId = 1;
  private version = 0;

  constructor(private readonly random: () => number) {}

  private pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[Math.floor(this.random() * items.length)];
  }

  /** A random statement, applied to the model as the database applies it (side first, bids after). */
  step(): string {
    const r = this.random();
    const keys = Array.from({ length: KEYS }, (_, i) => i);
    if (r < 0.3) {
      const key = this.pick(keys)!;
      const value = `v${++this.version}`;
      this.side.set(key, value);
      return `insert into side values (${key}, '${value}') on conflict (key) do update set value = excluded.value`;
    }
    if (r < 0.38) {
      const key = this.pick([...this.side.keys()]);
      if (key === undefined) return this.step();
      this.side.delete(key);
      return `delete from side where key = ${key}`;
    }
    if (r < 0.7) {
      const count = 1 + Math.floor(this.random() * 6);
      const values: string[] = [];
      for (let i = 0; i < count; i++) {
        const id = this.nextId++;
        const auction = Math.floor(this.random() * 40);
        const price = Math.floor(this.random() * 100);
        this.bids.set(id, { auction, price, value: this.side.get(auction % 10) });
        values.push(`(${id}, ${auction}, ${price})`);
      }
      return `insert into bids values ${values.join(', ')}`;
    }
    if (r < 0.85) {
      // An update of several bids at once: each new version sees the side as it is now.
      const modulus = 2 + Math.floor(this.random() * 3);
      for (const [id, bid] of this.bids) {
        if (id % modulus !== 0) continue;
        bid.auction += 1;
        bid.price += 1;
        bid.value = this.side.get(bid.auction % 10);
      }
      return `update bids set auction = auction + 1, price = price + 1 where id % ${modulus} = 0`;
    }
    const id = this.pick([...this.bids.keys()]);
    if (id === undefined) return this.step();
    this.bids.delete(id);
    return `delete from bids where id = ${id}`;
  }

  /** Each bid's value taken from the side table as it is now (the views' backfill at creation). */
  backfilled(): void {
    for (const bid of this.bids.values()) bid.value = this.side.get(bid.auction % 10);
  }

  /** What the inner (outer = false) or left view must hold, as sorted lines. */
  expected(outer: boolean): string[] {
    const lines: string[] = [];
    for (const [id, bid] of this.bids) {
      if (bid.value === undefined && !outer) continue;
      lines.push(`${id} | ${bid.auction} | ${bid.price} | ${bid.value ?? 'NULL'}`);
    }
    return lines.sort();
  }

  /** What the grouped view must hold: per side value, the bids that saw it and their prices' sum. */
  grouped(): string[] {
    const groups = new Map<string, { bids: number; total: number }>();
    for (const bid of this.bids.values()) {
      if (bid.value === undefined) continue;
      const group = groups.get(bid.value) ?? { bids: 0, total: 0 };
      group.bids++;
      group.total += bid.price;
      groups.set(bid.value, group);
    }
    return [...groups].map(([value, group]) => `${value} | ${group.bids} | ${group.total}`).sort();
  }
}

async function expectViews(h: Harness, model: Model, step: string): Promise<void> {
  expect(await h.lines('select * from tj'), `inner view after ${step}`).toEqual(model.expected(false));
  expect(await h.lines('select * from tjl'), `left view after ${step}`).toEqual(model.expected(true));
  expect(await h.lines('select * from tjg'), `grouped view after ${step}`).toEqual(model.grouped());
}

describe('temporal join views', () => {
  for (const regime of [
    { name: 'side table kept in memory', completeRows: 100_000 },
    { name: 'side table read per batch', completeRows: 4 },
    { name: 'at parallelism 2, the grouped view in workers', completeRows: 100_000, parallelism: 2 },
  ]) {
    it(`equal the side table as of each bid's moment (${regime.name}), across a restart`, async () => {
      temporalJoinDefaults.completeRows = regime.completeRows;
      const dir = mkdtempSync(join(tmpdir(), 'oxbow-temporal-join-'));
      const open = () => openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }), { tuning: { parallelism: regime.parallelism ?? 1 } });
      const model = new Model(seededRandom(regime.completeRows + (regime.parallelism ?? 0)));
      let h: Harness | undefined;
      try {
        h = await open();
        await h.run('create table side (key int primary key, value varchar)');
        await h.run('create table bids (id int primary key, auction int, price int)');
        for (let i = 0; i < 15; i++) await h.run(model.step());
        await h.run(`create materialized view tj as ${INNER}`);
        await h.run(`create materialized view tjl as ${LEFT}`);
        await h.run(`create materialized view tjg as ${GROUPED}`);
        model.backfilled();
        if (regime.parallelism !== undefined) {
          const plan = (await h.run('explain materialized view tjg')).rows.map((row) => row.join(' ')).join('\n');
          expect(plan).toMatch(/StreamHashAggregate[^\n]*\n\s*StreamExchange dist by[^\n]*\n(\s*StreamProject[^\n]*\n)+\s*StreamTemporalJoin/);
        }
        await expectViews(h, model, 'the backfill');
        // The side table is an input of the views: it cannot be dropped under them.
        expect((await h.failure('drop table side')).code).toBe('2BP01');
        for (let i = 0; i < 60; i++) {
          const step = model.step();
          await h.run(step);
          await expectViews(h, model, step);
        }
        await h.close();
        h = await open();
        await expectViews(h, model, 'the restart');
        for (let i = 0; i < 40; i++) {
          const step = model.step();
          await h.run(step);
          await expectViews(h, model, `${step} (after the restart)`);
        }
      } finally {
        await h?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }, 120_000);
  }

  for (const regime of [
    { name: 'kept in memory', completeRows: 100_000 },
    { name: 'read per batch', completeRows: 4 },
  ]) {
    it(`look up by a secondary index: every side row of the key as of each bid's moment (${regime.name})`, async () => {
      temporalJoinDefaults.completeRows = regime.completeRows;
      const dir = mkdtempSync(join(tmpdir(), 'oxbow-temporal-index-'));
      const open = () => openHarness(openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: 1 << 26 }));
      const random = seededRandom(31 + regime.completeRows);
      // The side rows by id: their group (the indexed column) and value.
      const side = new Map<number, { grp: number; value: string }>();
      const bids = new Map<number, { auction: number; values: string[] }>();
      let nextId = 1;
      let version = 0;
      const matches = (auction: number) => [...side.values()].filter((row) => row.grp === auction % 6).map((row) => row.value);
      const step = (): string => {
        const r = random();
        if (r < 0.35) {
          const id = Math.floor(random() * 14);
          const row = { grp: Math.floor(random() * 6), value: `v${++version}` };
          side.set(id, row);
          return `insert into side values (${id}, ${row.grp}, '${row.value}') on conflict (id) do update set grp = excluded.grp, value = excluded.value`;
        }
        if (r < 0.45 && side.size > 0) {
          const id = [...side.keys()][Math.floor(random() * side.size)]!;
          side.delete(id);
          return `delete from side where id = ${id}`;
        }
        if (r < 0.75 || bids.size === 0) {
          const id = nextId++;
          const auction = Math.floor(random() * 30);
          bids.set(id, { auction, values: matches(auction) });
          return `insert into bids values (${id}, ${auction})`;
        }
        if (r < 0.88) {
          for (const bid of bids.values()) {
            bid.auction += 1;
            bid.values = matches(bid.auction);
          }
          return 'update bids set auction = auction + 1';
        }
        const id = [...bids.keys()][Math.floor(random() * bids.size)]!;
        bids.delete(id);
        return `delete from bids where id = ${id}`;
      };
      const expected = (outer: boolean) =>
        [...bids].flatMap(([id, bid]) => (bid.values.length === 0 ? (outer ? [`${id} | ${bid.auction} | NULL`] : []) : bid.values.map((value) => `${id} | ${bid.auction} | ${value}`))).sort();
      const check = async (h: Harness, step: string) => {
        expect(await h.lines('select * from ti'), `inner after ${step}`).toEqual(expected(false));
        expect(await h.lines('select * from til'), `left after ${step}`).toEqual(expected(true));
      };
      let h: Harness | undefined;
      try {
        h = await open();
        await h.run('create table side (id int primary key, grp int, value varchar)');
        await h.run('create index side_grp on side (grp)');
        await h.run('create table bids (id int primary key, auction int)');
        for (let i = 0; i < 12; i++) await h.run(step());
        await h.run('create materialized view ti as select b.id, b.auction, s.value from bids b join side for system_time as of proctime() s on b.auction % 6 = s.grp');
        await h.run('create materialized view til as select b.id, b.auction, s.value from bids b left join side for system_time as of proctime() s on b.auction % 6 = s.grp');
        for (const bid of bids.values()) bid.values = matches(bid.auction);
        const plan = (await h.run('explain materialized view ti')).rows.map((row) => row.join(' ')).join('\n');
        expect(plan).toContain('StreamTemporalJoin inner public.side [grp, value] AS OF PROCTIME() lookup index side_grp (grp) = ((auction % 6))');
        await check(h, 'the backfill');
        for (let i = 0; i < 40; i++) {
          const statement = step();
          await h.run(statement);
          await check(h, statement);
        }
        await h.close();
        h = await open();
        for (let i = 0; i < 20; i++) {
          const statement = step();
          await h.run(statement);
          await check(h, `${statement} (after the restart)`);
        }
      } finally {
        await h?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }, 120_000);
  }

  it('sees the side rows written earlier in the same transaction', async () => {
    const h = await openHarness();
    try {
      await h.run('create table side (key int primary key, value varchar)');
      await h.run('create table bids (id int primary key, auction int, price int)');
      await h.run(`create materialized view tj as ${INNER}`);
      await h.run(`create materialized view tjl as ${LEFT}`);
      await h.run("begin; insert into side values (1, 'one'); insert into bids values (1, 11, 5), (2, 12, 6); commit");
      expect(await h.lines('select * from tj')).toEqual(['1 | 11 | 5 | one']);
      expect(await h.lines('select * from tjl')).toEqual(['1 | 11 | 5 | one', '2 | 12 | 6 | NULL']);
      // A batch SELECT with the clause is the plain join against the table as it is.
      await h.run("insert into side values (2, 'two'); update side set value = 'uno' where key = 1");
      expect(await h.lines(INNER)).toEqual(['1 | 11 | 5 | uno', '2 | 12 | 6 | two']);
      expect(await h.lines('select * from tj')).toEqual(['1 | 11 | 5 | one']);
      // A side change rolled back, and one in a statement that fails: neither is seen afterwards.
      await h.run("begin; update side set value = 'rolled back' where key = 1; insert into bids values (3, 21, 7); rollback");
      await expect(h.run("insert into side values (5, 'failed'), (5, 'again')")).rejects.toMatchObject({ code: '23505' });
      await h.run('insert into bids values (4, 31, 8), (5, 45, 9)');
      expect(await h.lines('select * from tj')).toEqual(['1 | 11 | 5 | one', '4 | 31 | 8 | uno']);
      expect(await h.lines('select * from tjl')).toEqual(['1 | 11 | 5 | one', '2 | 12 | 6 | NULL', '4 | 31 | 8 | uno', '5 | 45 | 9 | NULL']);
    } finally {
      await h.close();
    }
  });

  it('checks ON equalities beyond the key and other conditions on the looked-up row', async () => {
    // With the side table unchanged after the views' creation, each equals the plain join: the
    // batch executor recomputes it after every change of the bids.
    const h = await openHarness();
    try {
      await h.run('create table side (key int primary key, tag int, value varchar)');
      await h.run("insert into side select i, i % 3, 'v' || i from generate_series(0, 9) as i");
      await h.run('create table bids (id int primary key, auction int, price int)');
      const views = [
        ['tk', 'select b.id, b.price, s.value from bids b join side for system_time as of proctime() s on b.auction % 10 = s.key and b.price % 3 = s.tag'],
        ['tr', 'select b.id, b.price, s.value from bids b left join side for system_time as of proctime() s on b.auction % 10 = s.key and b.price > s.key * 10'],
        ['tn', 'select b.id, s.tag from bids b left join side for system_time as of proctime() s on b.auction % 10 = s.key and b.price % 3 is not distinct from s.tag'],
      ] as const;
      const plain = (query: string) => query.replaceAll(' for system_time as of proctime()', '');
      await h.run('insert into bids select i, i * 7 % 23, i * 13 % 50 from generate_series(1, 30) as i');
      for (const [name, query] of views) await h.run(`create materialized view ${name} as ${query}`);
      const random = seededRandom(5);
      for (let step = 0; step < 25; step++) {
        const id = 1 + Math.floor(random() * 40);
        const statement = random() < 0.4 ? `delete from bids where id = ${id}` : `insert into bids values (${id}, ${Math.floor(random() * 30)}, ${Math.floor(random() * 60)}) on conflict (id) do update set auction = excluded.auction, price = excluded.price`;
        await h.run(statement);
        for (const [name, query] of views) expect(await h.lines(`select * from ${name}`), `${name} after ${statement}`).toEqual(await h.lines(plain(query)));
      }
      expect((await h.lines('select count(*) from tk'))[0]).not.toBe('0');
    } finally {
      await h.close();
    }
  });

  it('is StreamTemporalJoin in EXPLAIN, with no state over an append-only source', async () => {
    const h = await openHarness();
    try {
      await h.run('create table side (key int8 primary key, value varchar)');
      await h.run('create table bids (id int primary key, auction int8, price int)');
      await h.run("create source bid (auction int8, price int8) with (connector = 'datagen', fields.auction.kind = 'sequence', fields.auction.start = '1', fields.auction.end = '10', datagen.rows.per.second = '1000')");
      const overTable = (await h.run(`explain create materialized view x as ${INNER}`)).rows.map((row) => row.join(' '));
      expect(overTable.join('\n')).toContain('StreamTemporalJoin inner public.side [key, value] AS OF PROCTIME() lookup (key) = ((auction % 10)) (stateful; state: #1 left rows with the right row they joined)');
      const overSource = (await h.run('explain create materialized view x as select b.auction, s.value from bid b join side for system_time as of proctime() s on mod(b.auction, 10) = s.key')).rows.map((row) => row.join(' '));
      expect(overSource.join('\n')).toContain('StreamTemporalJoin inner public.side [key, value] AS OF PROCTIME() lookup (key) = (mod(auction, 10)) (stateful)');
      expect(overSource.join('\n')).toContain('stored by source row id');
    } finally {
      await h.close();
    }
  });

  it('over an append-only source only inserts: an aggregate and a group top-N above it equal the plain join', async () => {
    const h = await openHarness();
    try {
      await h.run('create table side (key int8 primary key, value varchar)');
      // Keys 0-7 of 10: bids of auctions ending in 8 or 9 find no side row.
      await h.run("insert into side select k, 'v' || (k % 4) from generate_series(0, 7) as k");
      await h.run("create source bid (auction int8, price int8) with (connector = 'datagen', fields.auction.kind = 'sequence', fields.auction.start = '1', fields.auction.end = '3000', fields.price.min = '1', fields.price.max = '500', datagen.rows.per.second = '20000')");
      const join = (temporal: boolean) => `select b.auction, b.price, s.value from bid b join side ${temporal ? 'for system_time as of proctime() ' : ''}s on b.auction % 10 = s.key`;
      const grouped = (temporal: boolean) => `select value, count(*) as n, count(distinct price) as prices, min(price) as low, max(price) as high from (${join(temporal)}) j group by value`;
      const top = (temporal: boolean) => `select value, auction, price, rn from (select value, auction, price, row_number() over (partition by value order by price desc, auction) as rn from (${join(temporal)}) j) t where rn <= 3`;
      const plan = (await h.run(`explain create materialized view x as ${top(true)}`)).rows.map((row) => row.join(' ')).join('\n');
      expect(plan).toContain('StreamAppendOnlyGroupTopN');
      await h.run(`create materialized view agg as ${grouped(true)}`);
      await h.run(`create materialized view top3 as ${top(true)}`);
      const deadline = Date.now() + 60_000;
      while (Number((await h.run("select coalesce(sum(committed_offset), 0) from oxbow_catalog.source_partitions where source_name = 'bid'")).rows[0]![0]) < 3000) {
        if (Date.now() > deadline) throw new Error('the datagen source did not reach 3,000 rows');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The side table never changed: the temporal join's rows are the plain join's.
      for (const [view, query] of [['agg', grouped(false)], ['top3', top(false)]] as const) {
        const missing = await h.run(`select count(*) from ((${query}) except all (select * from ${view})) as d`);
        const extra = await h.run(`select count(*) from ((select * from ${view}) except all (${query})) as d`);
        expect([view, String(missing.rows[0]![0]), String(extra.rows[0]![0])]).toEqual([view, '0', '0']);
      }
      expect(String((await h.run('select count(*) from top3')).rows[0]![0])).toBe('12');
      expect(String((await h.run('select sum(n) from agg')).rows[0]![0])).toBe('2400');
    } finally {
      await h.close();
    }
  });

  it('refuses right sides it cannot look up, with SQLSTATE and position', async () => {
    const h = await openHarness();
    try {
      await h.run('create table side (key int primary key, value varchar)');
      await h.run('create table side2 (a int, b int, value varchar, primary key (a, b))');
      await h.run('create table nokey (key int, value varchar)');
      await h.run('create table bids (id int primary key, auction int, price int)');
      await h.run("create source src (k int) with (connector = 'datagen', fields.k.kind = 'sequence', fields.k.start = '1', fields.k.end = '10')");
      const cases: [string, string, string, string][] = [
        ['select * from bids b join side for system_time as of proctime() s on b.price = s.value::int', '0A000', 'a temporal join requires the ON clause\'s equalities to cover the primary key or an index of its lookup table: the ON clause covers neither the primary key (key) of "side" nor any of its indexes', 'for system_time'],
        ['select * from bids b join side2 for system_time as of proctime() s on b.auction = s.a', '0A000', 'a temporal join requires the ON clause\'s equalities to cover the primary key or an index of its lookup table: the ON clause covers neither the primary key (a, b) of "side2" nor any of its indexes', 'for system_time'],
        ['select * from bids b join nokey for system_time as of proctime() s on b.auction = s.key', '0A000', 'a temporal join requires the ON clause\'s equalities to cover the primary key or an index of its lookup table: "nokey" has no primary key, and the ON clause covers none of its indexes', 'for system_time'],
        ['select * from bids b join src for system_time as of proctime() s on b.auction = s.k', '42809', 'a temporal join needs a table or materialized view on its right side, and "src" is a source', 'for system_time'],
        ['select * from bids b full join side for system_time as of proctime() s on b.auction = s.key', '0A000', 'a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) must be an INNER or LEFT OUTER join, not FULL', 'for system_time'],
        ['select * from side for system_time as of proctime() s join bids b on b.auction = s.key', '0A000', 'FOR SYSTEM_TIME AS OF PROCTIME() is supported only on the right side of a join whose ON clause equates the primary key of the table (a temporal join)', 'for system_time'],
      ];
      for (const [query, code, message, at] of cases) {
        for (const statement of [`create materialized view bad as ${query}`, `create sink bad as ${query} with (connector = 'blackhole')`]) {
          const error = await h.failure(statement);
          expect({ code: error.code, message: error.message }, statement).toEqual({ code, message });
          expect(error.position, statement).toBe(statement.indexOf(at) + 1);
        }
      }
      expect(await h.lines("select count(*) from oxbow_catalog.objects where name = 'bad'")).toEqual(['0']);
    } finally {
      await h.close();
    }
  });
});
