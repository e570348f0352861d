// StreamHashAggregate's group cache (executor/stream/agg-cache.ts): the aggregate reads a cached
// group's state row from memory, and a missing key of a complete cache is a new group with no read,
// so a cache that is wrong shows as a view that differs from its query. Random inserts and deletes
// (duplicates, NULL keys and values, groups emptied and refilled) run through the dataflows of a
// keyed aggregate (count, sum, min, max: min / max read their value table when the current value
// goes), a two-key aggregate and a keyless one under five cache regimes: a large budget (complete
// caches), a budget of a few groups (evictions all the time), a table too large to load whole at
// the first change, aborted epochs plus restarts over the same store (the caches start cold), and
// aborted epochs with evictions. After every step each view's accumulated output must equal the
// aggregate recomputed in the test from the table's multiset.

import { beforeAll, describe, expect, it } from 'vitest';
import { initParser } from '../../../sql/parser/index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Row } from '../../../sql/value.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { ChangeBatch } from '../change-batch.js';
import { seededRandom } from '../../../test/support/seeded-random.js';
import { CachedViewRun, cacheRegimes, fixedCatalog, planView, textLine as line, type CacheRegime } from './stream-harness.js';

/** A table of more rows than this is not loaded whole (the default, 10,000, made small to keep the test fast). */
const COMPLETE_LOAD_ROWS = 30;

const int4 = scalar('int4');
const T = 100;
const relation: RelationDef = {
  id: T,
  kind: 'table',
  schema: 'public',
  name: 't',
  columns: ['id', 'k', 'v'].map((name) => ({ name, type: int4, nullable: true, hidden: false })),
  primaryKey: [],
  dependsOn: [],
};
const catalog = fixedCatalog([relation]);

type Oracle = (rows: readonly Row[]) => string[];

/** Groups rows by `key` and outputs one line per group from `output`. */
function grouped(rows: readonly Row[], key: (row: Row) => unknown[], output: (key: unknown[], rows: Row[]) => unknown[]): string[] {
  const groups = new Map<string, { key: unknown[]; rows: Row[] }>();
  for (const row of rows) {
    const k = key(row);
    const text = line(k);
    let group = groups.get(text);
    if (group === undefined) groups.set(text, (group = { key: k, rows: [] }));
    group.rows.push(row);
  }
  return [...groups.values()].map((group) => line(output(group.key, group.rows))).sort();
}

const values = (rows: readonly Row[]) => rows.map((row) => row[2]).filter((value): value is number => value !== null);
const sum = (rows: readonly Row[]) => (values(rows).length === 0 ? null : values(rows).reduce((a, b) => a + b, 0));
const min = (rows: readonly Row[]) => (values(rows).length === 0 ? null : Math.min(...values(rows)));
const max = (rows: readonly Row[]) => (values(rows).length === 0 ? null : Math.max(...values(rows)));

const VIEWS: [string, Oracle][] = [
  ['select k, count(*), count(v), sum(v), min(v), max(v) from t group by k', (rows) => grouped(rows, (row) => [row[1]], (key, group) => [key[0], group.length, values(group).length, sum(group), min(group), max(group)])],
  // PostgreSQL's %: the sign of the dividend; NULL stays NULL.
  ['select k, v % 3, count(*), sum(id) from t group by k, v % 3', (rows) => grouped(rows, (row) => [row[1], row[2] === null ? null : (row[2] as number) % 3], (key, group) => [key[0], key[1], group.length, group.reduce((a, row) => a + (row[0] as number), 0)])],
  ['select count(*), sum(v), max(v) from t', (rows) => [line([rows.length, sum(rows), max(rows)])]],
];

/** The preload inserts rows in keys the steps also use. */
const REGIMES = cacheRegimes({ preload: COMPLETE_LOAD_ROWS * 4, largeName: 'large budget (complete caches)', preloadName: 'a table too large to load whole', restartChance: 0.1 });

function run(sql: string, oracle: Oracle, regime: CacheRegime, seed: number): void {
  const next = seededRandom(seed);
  const view = new CachedViewRun(createMemoryStateStore(), 900, planView(catalog, sql), { memoryLimitBytes: regime.memoryLimitBytes, completeLoadRows: COMPLETE_LOAD_ROWS });
  let table: Row[] = [];
  const randomRow = (): Row => {
    const key = Math.floor(next() * 12);
    const value = Math.floor(next() * 20) - 5;
    return [Math.floor(next() * 8), key === 0 ? null : key, value === -5 ? null : value];
  };
  if (regime.preload > 0) {
    const rows = Array.from({ length: regime.preload }, randomRow);
    view.step(new Map([[T, { rows, signs: rows.map(() => 1) }]]));
    table.push(...rows);
    view.restart();
  }
  for (let step = 0; step < 50; step++) {
    const batch: ChangeBatch = { rows: [], signs: [] };
    const after = [...table];
    const changes = 1 + Math.floor(next() * 10);
    for (let c = 0; c < changes; c++) {
      if (after.length > 0 && next() < 0.4) {
        const [removed] = after.splice(Math.floor(next() * after.length), 1);
        batch.rows.push(removed!);
        batch.signs.push(-1);
      } else {
        const row = randomRow();
        after.push(row);
        batch.rows.push(row);
        batch.signs.push(1);
      }
    }
    if (!view.step(new Map([[T, batch]]), next() < regime.abortChance)) continue;
    table = after;
    expect(view.contents(), `${sql}, ${regime.name}, seed ${seed}, step ${step}`).toEqual(oracle(table));
    expect(view.manager.groupCaches.usedBytes).toBeLessThanOrEqual(view.manager.groupCaches.limitBytes);
    if (next() < regime.restartChance) view.restart();
  }
}

beforeAll(async () => {
  await initParser();
});

describe('StreamHashAggregate with its group cache equals the aggregate recomputed', () => {
  for (const regime of REGIMES) {
    it(regime.name, () => {
      for (const [sql, oracle] of VIEWS) for (let seed = 1; seed <= 4; seed++) run(sql, oracle, regime, seed);
    }, 60_000);
  }
});
