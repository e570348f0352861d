// The vnode map of keyed fragments (parallel/vnode-map.ts): the balanced map is vnode mod N, and a
// change of owners keeps every owner within one vnode of the others while moving only the vnodes
// it must: the removed owners' ones and each remaining owner's surplus over 256/N, counted here
// from the counts alone (an independent bound), and the same result every time. On a single node
// at parallelism 2 oxbow_catalog.vnodes lists a GROUP BY view's fragment as vnode mod 2 over the
// threads (no node id without --cluster), and nothing once the view is dropped. Given what each
// owner held before, the moved vnodes go to owners that never held them where the counts allow
// (after a join and a leave of the same node, none goes back to an owner that gave it away), the
// same vnodes moving and the counts as balanced.

import { describe, expect, it } from 'vitest';
import { VNODE_COUNT } from '../parallel/vnode.js';
import { openAtParallelism, temporaryDirectories } from './rocks-harness.js';
import type { Harness } from './stream-harness.js';
import { balancedMap, ownerCounts, ownerMoves, rebalanceMap, type VnodeMap, type VnodeOwner } from '../parallel/vnode-map.js';

function moved(before: VnodeMap, after: VnodeMap, next: readonly number[]): number {
  let count = 0;
  for (let vnode = 0; vnode < VNODE_COUNT; vnode++) if (next[before[vnode]!] !== after[vnode]) count++;
  return count;
}

/** The fewest vnodes any balanced map can move: removed owners' vnodes plus each kept owner's surplus over its count (the largest counts getting the ceil). */
function fewest(before: VnodeMap, oldOwners: number, next: readonly number[], owners: number): number {
  const counts = ownerCounts(before, oldOwners);
  const kept = new Array<number>(owners).fill(0);
  let orphans = 0;
  counts.forEach((count, owner) => {
    if (next[owner]! < 0) orphans += count;
    else kept[next[owner]!] = count;
  });
  const sorted = [...kept].sort((a, b) => b - a);
  const base = Math.floor(VNODE_COUNT / owners);
  let surplus = 0;
  sorted.forEach((count, rank) => {
    surplus += Math.max(0, count - (base + (rank < VNODE_COUNT % owners ? 1 : 0)));
  });
  return orphans + surplus;
}

function expectBalanced(map: VnodeMap, owners: number): void {
  const counts = ownerCounts(map, owners);
  expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  expect(counts.reduce((sum, count) => sum + count, 0)).toBe(VNODE_COUNT);
}

describe('vnode map', () => {
  it('starts from vnode mod N', () => {
    for (const owners of [1, 2, 3, 7, 256, 300]) {
      const map = balancedMap(owners);
      for (let vnode = 0; vnode < VNODE_COUNT; vnode++) expect(map[vnode]).toBe(vnode % owners);
    }
    expect(() => balancedMap(0)).toThrow(RangeError);
  });

  it('moves 64 vnodes when a 4th owner joins 3', () => {
    const before = balancedMap(3);
    const next = [0, 1, 2];
    const after = rebalanceMap(before, next, 4);
    expectBalanced(after, 4);
    expect(moved(before, after, next)).toBe(64);
    // The newcomer took from each owner in turn: 22, 21 and 21 of them.
    const took = [0, 0, 0];
    for (let vnode = 0; vnode < VNODE_COUNT; vnode++) if (after[vnode] === 3) took[before[vnode]!]!++;
    expect(took.sort()).toEqual([21, 21, 22]);
    // Against today's modulo, which moves most of them.
    const modulo = balancedMap(4);
    expect(moved(before, modulo, next)).toBeGreaterThan(150);
  });

  it('gives a removed owner its vnodes to the others only', () => {
    const before = balancedMap(4);
    const next = [0, -1, 1, 2];
    const after = rebalanceMap(before, next, 3);
    expectBalanced(after, 3);
    expect(moved(before, after, next)).toBe(64);
    for (let vnode = 0; vnode < VNODE_COUNT; vnode++) if (before[vnode] !== 1) expect(after[vnode]).toBe(next[before[vnode]!]);
  });

  it('moves the fewest vnodes over a run of joins and leaves, balanced and deterministic', () => {
    let seed = 12345;
    const random = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    let map = balancedMap(2);
    let owners = 2;
    for (let step = 0; step < 300; step++) {
      // Remove some owners (never all), then add some.
      const next: number[] = [];
      let kept = 0;
      for (let owner = 0; owner < owners; owner++) next.push(owners > 1 && random(4) === 0 ? -1 : kept++);
      if (kept === 0) next[0] = kept++;
      const count = Math.min(40, kept + random(3));
      const after = rebalanceMap(map, next, Math.max(1, count));
      expectBalanced(after, Math.max(1, count));
      expect(moved(map, after, next)).toBe(fewest(map, owners, next, Math.max(1, count)));
      expect(Array.from(rebalanceMap(map, next, Math.max(1, count)))).toEqual(Array.from(after));
      map = after;
      owners = Math.max(1, count);
    }
  });

  it('gives moved vnodes to owners that never held them where the counts allow', () => {
    // Per owner (by who it is), the vnodes it ever held; a map's owners by position.
    const everHeld = new Map<string, Set<number>>();
    const note = (map: VnodeMap, who: readonly string[]) => map.forEach((owner, vnode) => (everHeld.get(who[owner]!) ?? everHeld.set(who[owner]!, new Set()).get(who[owner]!)!).add(vnode));
    const regained = (before: VnodeMap, after: VnodeMap, next: readonly number[], who: readonly string[]) => {
      let count = 0;
      for (let vnode = 0; vnode < VNODE_COUNT; vnode++) if (next[before[vnode]!] !== after[vnode] && everHeld.get(who[after[vnode]!]!)?.has(vnode) === true) count++;
      return count;
    };
    // Two threads, node b joins, node c joins, node b leaves.
    const steps: { who: string[]; next: number[] }[] = [
      { who: ['t0', 't1', 'b'], next: [0, 1] },
      { who: ['t0', 't1', 'b', 'c'], next: [0, 1, 2] },
      { who: ['t0', 't1', 'c'], next: [0, 1, -1, 2] },
    ];
    const run = (withHeld: boolean): number[] => {
      everHeld.clear();
      let map = balancedMap(2);
      note(map, ['t0', 't1']);
      const counts: number[] = [];
      for (const { who, next } of steps) {
        const heldBefore = (owner: number, vnode: number) => everHeld.get(who[owner]!)?.has(vnode) === true;
        const after = rebalanceMap(map, next, who.length, withHeld ? heldBefore : undefined);
        expectBalanced(after, who.length);
        expect(moved(map, after, next)).toBe(fewest(map, next.length, next, who.length));
        counts.push(regained(map, after, next, who));
        note(after, who);
        map = after;
      }
      return counts;
    };
    // Without what the owners held, the threads get back vnodes they gave b; with it, none does.
    expect(run(false)[2]).toBeGreaterThan(0);
    expect(run(true)).toEqual([0, 0, 0]);
  });

  it('moves the same vnodes, balanced, with fewer or as many given back, over a run of joins and leaves', () => {
    let seed = 777;
    const random = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    let map = balancedMap(3);
    let who = ['o0', 'o1', 'o2'];
    let made = 3;
    const everHeld = new Map<string, Set<number>>();
    const note = (m: VnodeMap) => m.forEach((owner, vnode) => (everHeld.get(who[owner]!) ?? everHeld.set(who[owner]!, new Set()).get(who[owner]!)!).add(vnode));
    note(map);
    let fewerGivenBack = 0;
    for (let step = 0; step < 200; step++) {
      const next: number[] = [];
      const nextWho: string[] = [];
      who.forEach((name) => {
        if (who.length > 1 && random(3) === 0) next.push(-1);
        else next.push(nextWho.push(name) - 1);
      });
      if (nextWho.length === 0) next[0] = nextWho.push(who[0]!) - 1;
      for (let add = random(3); add > 0 && nextWho.length < 12; add--) nextWho.push(`o${made++}`);
      const heldBefore = (owner: number, vnode: number) => everHeld.get(nextWho[owner]!)?.has(vnode) === true;
      const plain = rebalanceMap(map, next, nextWho.length);
      const after = rebalanceMap(map, next, nextWho.length, heldBefore);
      expectBalanced(after, nextWho.length);
      expect(moved(map, after, next)).toBe(moved(map, plain, next));
      const given = (m: VnodeMap) => m.filter((owner, vnode) => next[map[vnode]!] !== owner && heldBefore(owner, vnode)).length;
      expect(given(after)).toBeLessThanOrEqual(given(plain));
      if (given(after) < given(plain)) fewerGivenBack++;
      expect(Array.from(rebalanceMap(map, next, nextWho.length, heldBefore))).toEqual(Array.from(after));
      map = after;
      who = nextWho;
      note(map);
    }
    expect(fewerGivenBack).toBeGreaterThan(0);
  });

  it('matches owners by who they are', () => {
    const before: VnodeOwner[] = [
      { node: 'a', thread: 0 },
      { node: 'a', thread: 1 },
      { node: 'b', thread: null },
      { node: 'c', thread: null },
    ];
    const after: VnodeOwner[] = [
      { node: 'a', thread: 0 },
      { node: 'a', thread: 1 },
      { node: 'c', thread: null },
      { node: 'd', thread: null },
    ];
    expect(ownerMoves(before, after)).toEqual([0, 1, -1, 2]);
  });
});

let h: Harness | undefined;
const freshDirectory = temporaryDirectories('oxbow-vnode-map-', async () => {
  await h?.close();
  h = undefined;
});

describe('oxbow_catalog.vnodes on a single node', () => {
  it("lists a keyed fragment's vnodes over the threads, and none once its view is dropped", async () => {
    h = await openAtParallelism(freshDirectory(), 2);
    await h.run('create table t (k int, v int)');
    await h.run('create materialized view kv as select k, count(*) as n from t group by k');
    const rows = await h.rows('select view_name, fragment, vnode, node_id, thread from oxbow_catalog.vnodes order by vnode');
    expect(rows.length).toBe(VNODE_COUNT);
    rows.forEach((row, vnode) => expect(row).toEqual(['kv', 0, vnode, null, vnode % 2]));
    expect(await h.rows('select count(*) from oxbow_catalog.nodes')).toEqual([[0n]]);
    await h.run('drop materialized view kv');
    expect(await h.rows('select count(*) from oxbow_catalog.vnodes')).toEqual([[0n]]);
  }, 60_000);
});
