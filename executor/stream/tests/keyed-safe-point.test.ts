// A keyed fragment's safe point made rather than waited for (executor/cluster/README.md, "Keyed
// shares"; parallel-fragment.ts, holdForSafePoint): with pipelined barriers (a Kafka topic read
// behind) each epoch's first chunk comes before the previous epoch is durable, so the fragment is
// never at an epoch boundary with nothing in flight and a cut for a changed membership would wait
// for the source to idle. Driven by hand on the fragment's node of a real view at --parallelism 2
// on RocksDB, its worker threads real: a membership stand-in (the unit's one mock) whose
// generation the test bumps, with no node listed, so the cut has no seed to read and keeps both
// threads running (neither gains a vnode): the held rows go to them by the map.
//
// - an epoch's chunk pushed while the last epoch is not durable and a cut waits is held; the
//   last epoch's durability cuts the owners and the held rows reach the new owners: the seal's
//   output is the groups of those rows (the model: count and sum per key), nothing lost or doubled;
// - a seal that comes before the durability posts the held rows to the owners as they are.
import { describe, expect, it } from 'vitest';
import type { Row } from '../../../sql/value.js';
import type { Epoch } from '../../../sql/epoch.js';
import type { EngineCore } from '../../engine/engine-core.js';
import type { ChangeBatch } from '../change-batch.js';
import type { ParallelFragmentNode } from '../parallel/parallel-fragment.js';
import type { RemoteShareSource } from '../parallel/source-fragment.js';
import { openOnRocks, runtimeOf, temporaryDirectories } from './rocks-harness.js';
import type { Harness } from './stream-harness.js';

let h: Harness | undefined;
const freshDirectory = temporaryDirectories('oxbow-keyed-safe-point-', async () => {
  await h?.close();
  h = undefined;
});

/** The membership as the fragment sees it: a generation the test changes, no node listed. */
function membership(): RemoteShareSource & { bump(): void } {
  let generation = 1;
  return {
    generation: () => generation,
    keys: () => new Set<string>(),
    targets: () => [],
    keyedTargets: () => [],
    bump: () => void generation++,
  };
}

/** The groups (key, count, sum) of rows [g, v], as the aggregate's output lines. */
function model(rows: readonly (readonly [number, number])[]): string[] {
  const groups = new Map<number, { n: number; s: number }>();
  for (const [g, v] of rows) {
    const group = groups.get(g) ?? { n: 0, s: 0 };
    group.n++;
    group.s += v;
    groups.set(g, group);
  }
  return [...groups].map(([g, { n, s }]) => `+${g}|${n}|${s}`).sort();
}

function lines(changes: ChangeBatch): string[] {
  return changes.rows.map((row, index) => `${changes.signs[index]! > 0 ? '+' : '-'}${row.map(String).join('|')}`).sort();
}

describe('a keyed fragment makes its safe point under pipelined epochs', () => {
  it('holds the next epoch rows while a cut waits, cuts at durability, and loses or doubles nothing', async () => {
    const shares = membership();
    h = await openOnRocks(freshDirectory(), { tuning: { parallelism: 2 }, remoteShares: shares });
    await h.run('create table t (id int primary key, g int, v int)');
    await h.run('create materialized view kv as select g, count(*) as n, sum(v) as s from t group by g');
    const runtime = runtimeOf(h)!;
    const node = [...(runtime as unknown as { nodes: Set<ParallelFragmentNode> }).nodes][0]!;
    const store = (h.engine as unknown as { core: EngineCore }).core.store;
    const columns = node.inputs[0]!.columns.map((column) => column.name);
    expect(columns).toContain('g');
    const batch = (rows: readonly (readonly [number, number])[]): ChangeBatch => ({
      rows: rows.map(([g, v], index): Row => columns.map((name) => (name === 'g' ? g : name === 'v' ? v : index))),
      signs: rows.map(() => 1),
    });
    let epoch: Epoch = store.latestEpoch;
    /** One chunk pushed while holding (as the source manager's chunks are). */
    const push = (rows: readonly (readonly [number, number])[]): ChangeBatch => {
      node.setHolding(true);
      try {
        return node.apply(0, batch(rows));
      } finally {
        node.setHolding(false);
      }
    };
    const seal = (): ChangeBatch => {
      node.setHolding(true);
      try {
        return node.seal();
      } finally {
        node.setHolding(false);
      }
    };
    /** The epoch's writes handed over (the test does not write them: each epoch below takes new keys). */
    const commit = (): Epoch => {
      epoch += 1n;
      node.contribute(epoch)?.wait();
      return epoch;
    };
    const rows = (from: number, to: number): [number, number][] => Array.from({ length: to - from }, (_, index) => [from + (index % 7), from + index] as [number, number]);

    // Epoch 1, then epoch 2's first chunk before epoch 1 is durable, a cut waiting.
    const first = rows(0, 40);
    expect(push(first).rows.length).toBe(0);
    expect(lines(seal())).toEqual(model(first));
    const one = commit();
    shares.bump();
    const second = rows(100, 160);
    expect(push(second.slice(0, 30)).rows.length).toBe(0);
    expect(push(second.slice(30)).rows.length).toBe(0);
    expect(node.describe()).not.toMatch(/cut again/);
    node.durable(one);
    expect(node.describe()).toMatch(/to 2 workers, vnodes cut again 1 time \(2 owners kept, 0 started\), an epoch's rows held for a safe point 1 time/);
    // The held rows reached the new owners once.
    expect(lines(seal())).toEqual(model(second));
    node.durable(commit());

    // The seal comes before the durability: the held rows go to the owners as they are.
    const third = rows(200, 230);
    push(third);
    expect(lines(seal())).toEqual(model(third));
    const three = commit();
    shares.bump();
    const fourth = rows(300, 320);
    push(fourth);
    expect(lines(seal())).toEqual(model(fourth));
    expect(node.describe()).toMatch(/vnodes cut again 1 time \(2 owners kept, 0 started\), an epoch's rows held for a safe point 2 times/);
    const four = commit();
    node.durable(three);
    node.durable(four);
    // Nothing in flight at the last durability: the cut.
    expect(node.describe()).toMatch(/vnodes cut again 2 times/);
  }, 60_000);
});
