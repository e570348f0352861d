// StreamHashJoin's key-group cache (executor/stream/join-cache.ts): the join reads its state from
// memory when a group is cached and keeps cached groups equal to the state with every write, so a
// cache that is wrong shows as a view that differs from its query. Random changes to both sides
// (duplicates, NULL keys, deletes, rows moving between keys, a residual) of every join type run
// through the dataflow under four cache regimes: a large budget (sides stay complete), a budget
// of a few groups (evictions all the time: probes read the state, own rows are point reads), a
// side too large to load whole at start (probed keys only), and an aborted epoch now and then plus
// restarts over the same store (the caches start cold). After every step the view's accumulated
// output must equal the join recomputed in the test from the two multisets (nested loops); the
// JoinSideCache unit tests check find / append / compaction / eviction against hand-worked values.

import { beforeAll, describe, expect, it } from 'vitest';
import { initParser } from '../../../sql/parser/index.js';
import { type as scalar } from '../../../sql/types.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Row } from '../../../sql/value.js';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { ChangeBatch } from '../change-batch.js';
import { emptyGroup, GroupCacheBudget, JOIN_COUNT, JOIN_ROW, JoinSideCache, type JoinGroup } from '../join-cache.js';
import { seededRandom } from '../../../test/support/seeded-random.js';
import { CachedViewRun, cacheRegimes, fixedCatalog, nestedLoopJoin, planView, type CacheRegime } from './stream-harness.js';

/** A side of more rows than this is not loaded whole (the default, 10,000, made small to keep the test fast). */
const COMPLETE_LOAD_ROWS = 40;

const int4 = scalar('int4');
const column = (name: string) => ({ name, type: int4, nullable: true, hidden: false });
const L = 100;
const R = 101;
const VIEW = 900;
const relations: RelationDef[] = [
  { id: L, kind: 'table', schema: 'public', name: 'l', columns: [column('id'), column('k'), column('v')], primaryKey: [], dependsOn: [] },
  { id: R, kind: 'table', schema: 'public', name: 'r', columns: [column('id'), column('k'), column('w')], primaryKey: [], dependsOn: [] },
];
const catalog = fixedCatalog(relations);

type JoinType = 'inner' | 'left' | 'right' | 'full' | 'semi' | 'anti';
const QUERIES: Record<JoinType, string> = {
  inner: 'select l.id, l.v, r.id, r.w from l join r on l.k = r.k and l.v <= r.w',
  left: 'select l.id, l.v, r.id, r.w from l left join r on l.k = r.k and l.v <= r.w',
  right: 'select l.id, l.v, r.id, r.w from l right join r on l.k = r.k and l.v <= r.w',
  full: 'select l.id, l.v, r.id, r.w from l full join r on l.k = r.k and l.v <= r.w',
  semi: 'select l.id, l.v from l where exists (select 1 from r where r.k = l.k and l.v <= r.w)',
  anti: 'select l.id, l.v from l where not exists (select 1 from r where r.k = l.k and l.v <= r.w)',
};

/** The join recomputed from the two multisets: the oracle. */
function recompute(type: JoinType, left: readonly Row[], right: readonly Row[]): string[] {
  return nestedLoopJoin(type, left, right, (l, r) => l[1] !== null && l[1] === r[1] && (l[2] as number) <= (r[2] as number));
}

/** The preload puts rows into the left side (keys no change uses). */
const REGIMES = cacheRegimes({ preload: COMPLETE_LOAD_ROWS + 1, largeName: 'large budget (complete sides)', preloadName: 'a side too large to load whole', restartChance: 0.1 });

function run(type: JoinType, regime: CacheRegime, seed: number): void {
  const next = seededRandom(seed);
  const view = new CachedViewRun(createMemoryStateStore(), VIEW, planView(catalog, QUERIES[type], { viewId: VIEW }), { memoryLimitBytes: regime.memoryLimitBytes, completeLoadRows: COMPLETE_LOAD_ROWS });
  const sides: Row[][] = [[], []];
  if (regime.preload > 0) {
    const rows: Row[] = Array.from({ length: regime.preload }, (_, i) => [1000 + i, 100 + (i % 50), i % 10]);
    view.step(new Map([[L, { rows, signs: rows.map(() => 1) }]]));
    sides[0]!.push(...rows);
    view.restart();
  }
  for (let step = 0; step < 60; step++) {
    const batches: [ChangeBatch, ChangeBatch] = [
      { rows: [], signs: [] },
      { rows: [], signs: [] },
    ];
    const after = sides.map((rows) => [...rows]);
    const changes = 1 + Math.floor(next() * 8);
    for (let c = 0; c < changes; c++) {
      const side = next() < 0.5 ? 0 : 1;
      const rows = after[side]!;
      if (rows.length > 0 && next() < 0.35) {
        const [removed] = rows.splice(Math.floor(next() * rows.length), 1);
        batches[side].rows.push(removed!);
        batches[side].signs.push(-1);
      } else {
        // A few ids, keys and values: duplicates and shared keys are common; key 0 is NULL.
        const key = Math.floor(next() * 5);
        const row: Row = [Math.floor(next() * 6), key === 0 ? null : key, Math.floor(next() * 10)];
        rows.push(row);
        batches[side].rows.push(row);
        batches[side].signs.push(1);
      }
    }
    const inputs = new Map<number, ChangeBatch>();
    if (batches[0].rows.length > 0) inputs.set(L, batches[0]);
    if (batches[1].rows.length > 0) inputs.set(R, batches[1]);
    if (!view.step(inputs, next() < regime.abortChance)) continue;
    sides[0] = after[0]!;
    sides[1] = after[1]!;
    expect(view.contents(), `${type}, ${regime.name}, seed ${seed}, step ${step}`).toEqual(recompute(type, sides[0], sides[1]));
    if (next() < regime.restartChance) view.restart();
  }
}

beforeAll(async () => {
  await initParser();
});

describe('StreamHashJoin with its key-group cache equals the join recomputed', () => {
  for (const regime of REGIMES) {
    it(regime.name, () => {
      for (const type of Object.keys(QUERIES) as JoinType[]) for (let seed = 1; seed <= 4; seed++) run(type, regime, seed);
    }, 60_000);
  }
});

function rowsOf(group: JoinGroup, stride: number): Row[] {
  const rows: Row[] = [];
  for (let at = 0; at < group.slots.length; at += stride) rows.push(group.slots[at + JOIN_ROW] as Row);
  return rows;
}

describe('JoinSideCache', () => {
  const types = [int4, int4];

  it('finds rows by value, appends, compacts deleted rows and charges the budget', () => {
    const budget = new GroupCacheBudget(1 << 20);
    const cache = new JoinSideCache(budget, types, 1);
    const group = emptyGroup();
    cache.put(cache.mapKey([7]), group);
    const base = budget.usedBytes;
    expect(base).toBeGreaterThan(0);
    // 40 rows: past the size where a group is searched by hash instead of a scan.
    for (let i = 0; i < 40; i++) cache.append(group, [i, i * 2], 1, 0);
    expect(cache.rows).toBe(40);
    // Each row [small int, small int] 48 + 16 bytes; the slots' capacity 151 (see below) 1224.
    expect(budget.usedBytes - base).toBe(40 * 64 + 1224);
    expect(cache.find(group, [17, 34])).toBe(17);
    // The first find past 16 rows built the group's index: charged 800 + 28 a row.
    expect(budget.usedBytes - base).toBe(40 * 64 + 1224 + 800 + 40 * 28);
    expect(cache.find(group, [17, 35])).toBe(-1);
    expect(cache.get(cache.mapKey([7]))).toBe(group);
    expect(cache.get(cache.mapKey([8]))).toBeUndefined();
    // Delete 30 of the 40 (count 0): more deleted than left, so compaction keeps the 10 live rows in order.
    for (let i = 0; i < 30; i++) {
      group.slots[i * cache.stride + JOIN_COUNT] = 0;
      group.deleted++;
    }
    cache.compact(group);
    expect(rowsOf(group, cache.stride)).toEqual(Array.from({ length: 10 }, (_, i) => [30 + i, (30 + i) * 2]));
    expect(group.deleted).toBe(0);
    expect(cache.rows).toBe(10);
    // The index is dropped (its charge with it) and the slots trimmed to their 30 (16 + 240 bytes).
    expect(budget.usedBytes).toBe(base + 10 * 64 + 256);
    expect(cache.find(group, [35, 70])).toBe(5);
  });

  it("charges a row's texts by their length and the slots' capacity as V8 grows it, and gives that back when it compacts", () => {
    const budget = new GroupCacheBudget(1 << 20);
    const cache = new JoinSideCache(budget, [scalar('text'), int4], 1);
    const group = emptyGroup();
    cache.put(cache.mapKey(['k']), group);
    const base = budget.usedBytes;
    // By hand (storage/row-cache.ts's layout): the row array 48 + 2 slots 16, the 1000-char string
    // 16 + 1000 (8-aligned: 1016), the small integer nothing: 1080 a row. Its 3 slots (row, count,
    // degree) live in the group's one array, which V8 grows on a push past its end to the new
    // length * 1.5 + 16: lengths 3, 21, 48, 90 give capacities 20, 47, 88, 151; 151 slots are
    // 16 + 8 * 151 = 1224 bytes.
    for (let i = 0; i < 40; i++) cache.append(group, ['x'.repeat(1000) + '', i], 1, 0);
    expect(group.capacity).toBe(151);
    expect(budget.usedBytes - base).toBe(40 * 1080 + 1224);
    for (let i = 0; i < 30; i++) {
      group.slots[i * cache.stride + JOIN_COUNT] = 0;
      group.deleted++;
    }
    // 30 slots left of 151: V8 trims a backing store more than half empty to its length (16 + 240).
    cache.compact(group);
    expect(group.capacity).toBe(30);
    expect(budget.usedBytes - base).toBe(10 * 1080 + 256);
    cache.reset();
    expect(budget.usedBytes).toBe(0);
  });

  it('over its budget, drops the oldest groups first and is no longer complete', () => {
    const probe = new GroupCacheBudget(1 << 20);
    const sizing = new JoinSideCache(probe, types, 2);
    sizing.put(sizing.mapKey([0, 0]), emptyGroup());
    const groupBytes = probe.usedBytes;
    // Room for three empty groups.
    const budget = new GroupCacheBudget(3 * groupBytes);
    const cache = new JoinSideCache(budget, types, 2);
    cache.complete = true;
    for (let k = 0; k < 3; k++) cache.put(cache.mapKey([k, k]), emptyGroup());
    expect(cache.complete).toBe(true);
    cache.put(cache.mapKey([3, 3]), emptyGroup());
    expect(cache.complete).toBe(false);
    expect(cache.get(cache.mapKey([0, 0]))).toBeUndefined();
    for (let k = 1; k < 4; k++) expect(cache.get(cache.mapKey([k, k]))).toBeDefined();
    expect(budget.usedBytes).toBe(3 * groupBytes);
    // Two-column keys that would collide if joined naively stay apart.
    expect(cache.mapKey([1, 23])).not.toBe(cache.mapKey([12, 3]));
    cache.reset();
    expect(budget.usedBytes).toBe(0);
    expect(cache.loaded).toBe(false);
  });
});
