// State tables keyed by vnode (state-table.ts `vnodeColumns`): every key carries the hash of its
// vnode columns in the key layout's vnode byte (mvcc-key.ts), so a vnode is one key range. The
// table answers as a table keyed without it does: the same random writes, deletes, commits (some
// sealed in flight) go to both, and every read (point, key group forward and reverse with limits,
// between two keys of a group, whole table, AS OF, versions, prefixIsNew) is compared. The stored
// keys are checked byte by byte against the hash, and a probe of a new key group reads no backend
// once its vnode's bound is known (one seek per vnode, when a read of it first needs it).
import { describe, expect, it, vi } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { createMemoryStateStore } from './memory-state-store.js';
import type { StateTableSchema } from './state-table.js';
import { forEachPacked } from './rocksdb.js';
import { tableLowerBound, tableUpperBound, vnodeRange, vnodeRunRanges } from './mvcc-key.js';
import { vnodeOf } from './vnode-hash.js';
import { decodeRow } from './row-codec.js';

const T0 = Date.UTC(2026, 0, 1);
const epochAt = (seconds: number) => epochFromMillis(T0 + seconds * 1000);
const columnTypes = [type('int8'), type('text'), type('int4')];
/** (group, member, value): keyed by (group, member), the vnode by the group (a join side by key). */
const keyed: StateTableSchema = { tableId: 31, columnTypes, primaryKey: [0, 1], vnodeColumns: [0] };
const plain: StateTableSchema = { tableId: 32, columnTypes, primaryKey: [0, 1] };

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const sortRows = (rows: Row[]): string[] => rows.map((row) => JSON.stringify(row, (_, value) => (typeof value === 'bigint' ? `${value}n` : value))).sort();

describe('a state table keyed by vnode', () => {
  it('answers every read as the same table keyed without the vnode', async () => {
    const store = createMemoryStateStore();
    const byVnode = store.table(keyed);
    const flat = store.table(plain);
    const next = random(7);
    const groups = 40;
    const epochs: bigint[] = [];
    const row = (group: number, member: number, value: number): Row => [BigInt(group), `m${member}`, value];
    for (let epoch = 1; epoch <= 30; epoch++) {
      for (let write = 0; write < 60; write++) {
        const r = row(Math.floor(next() * groups), Math.floor(next() * 6), Math.floor(next() * 1000));
        if (next() < 0.25) {
          byVnode.delete(r);
          flat.delete(r);
        } else {
          byVnode.insert(r);
          flat.insert(r);
        }
      }
      for (let read = 0; read < 20; read++) {
        const group = BigInt(Math.floor(next() * (groups + 5)));
        const member = `m${Math.floor(next() * 6)}`;
        expect(byVnode.get([group, member])).toEqual(flat.get([group, member]));
        const reverse = next() < 0.5;
        const limit = next() < 0.3 ? 1 + Math.floor(next() * 3) : undefined;
        const options = { prefix: [group], reverse, ...(limit === undefined ? {} : { limit }) };
        expect([...byVnode.scan(options)]).toEqual([...flat.scan(options)]);
        // Between two keys of one group (an aggregate's next extreme), either bound alone too.
        const from = `m${Math.floor(next() * 6)}`;
        const between = { start: [group, from], end: [group, `${from}z`], reverse };
        expect([...byVnode.scan(between)]).toEqual([...flat.scan(between)]);
        expect([...byVnode.scan({ start: [group, from] })].filter((r) => r[0] === group)).toEqual([...flat.scan({ start: [group, from] })].filter((r) => r[0] === group));
        expect([...byVnode.scan({ end: [group, from], reverse: true })].filter((r) => r[0] === group)).toEqual([...flat.scan({ end: [group, from], reverse: true })].filter((r) => r[0] === group));
        // New means no row of the group, ever written: never new while the group has rows.
        if (byVnode.prefixIsNew!([group])) expect([...flat.scan({ prefix: [group] })]).toEqual([]);
      }
      expect(sortRows([...byVnode.scan()])).toEqual(sortRows([...flat.scan()]));
      const at = epochAt(epoch);
      if (epoch % 3 === 0) await store.commitAsync(at);
      else store.commit(at);
      epochs.push(at);
    }
    for (const at of [epochs[4]!, epochs[17]!, epochs[29]!]) {
      expect(sortRows([...byVnode.scan({ epoch: at })])).toEqual(sortRows([...flat.scan({ epoch: at })]));
      for (let group = 0n; group < 10n; group++) {
        expect([...byVnode.scan({ prefix: [group], epoch: at })]).toEqual([...flat.scan({ prefix: [group], epoch: at })]);
        expect(byVnode.get([group, 'm1'], at)).toEqual(flat.get([group, 'm1'], at));
      }
    }
    for (let group = 0n; group < 10n; group++) {
      expect([...byVnode.versions(epochs[2]!, epochs[25]!, { prefix: [group] })]).toEqual([...flat.versions(epochs[2]!, epochs[25]!, { prefix: [group] })]);
    }
    await store.close();
  });

  it('stores each key under the vnode its columns hash to, one key range per vnode', async () => {
    const store = createMemoryStateStore();
    const table = store.table(keyed);
    for (let group = 0; group < 500; group++) table.insert([BigInt(group), 'a', group]);
    store.commit(epochAt(1));
    const seen = new Map<number, number>();
    const iterator = store.memory.scan({ lowerBound: tableLowerBound(31), upperBound: tableUpperBound(31) });
    let previous = -1;
    for (let packed = iterator.nextPacked(100); packed !== null; packed = iterator.nextPacked(100)) {
      forEachPacked(packed, (buffer, keyStart, _keyEnd, valueStart) => {
        const vnode = buffer[keyStart + 4]!;
        // The row's first column is the group: its hash is the key's vnode byte.
        const group = decodeRow(buffer, valueStart)![0] as bigint;
        expect(vnode).toBe(vnodeOf([group], [type('int8')]));
        expect(vnode).toBeGreaterThanOrEqual(previous);
        previous = vnode;
        seen.set(vnode, (seen.get(vnode) ?? 0) + 1);
      });
    }
    iterator.close();
    let expected = new Map<number, number>();
    for (let group = 0; group < 500; group++) {
      const vnode = vnodeOf([BigInt(group)], [type('int8')]);
      expected.set(vnode, (expected.get(vnode) ?? 0) + 1);
    }
    expected = new Map([...expected].sort((a, b) => a[0] - b[0]));
    expect(new Map([...seen].sort((a, b) => a[0] - b[0]))).toEqual(expected);
    // A key group's scan reads its vnode's range only.
    for (let group = 0; group < 500; group += 37) expect([...table.scan({ prefix: [BigInt(group)] })]).toEqual([[BigInt(group), 'a', group]]);
    await store.close();
  });

  it('probes a new key group above its vnode bound with no backend read', async () => {
    const store = createMemoryStateStore();
    const table = store.table(keyed);
    for (let group = 1; group <= 200; group++) table.insert([BigInt(group), 'a', group]);
    store.commit(epochAt(1));
    const scans = vi.spyOn(store.memory, 'scan');
    // A vnode's bound is read when a read of that vnode first needs it: one reverse seek.
    expect(table.prefixIsNew!([1000n])).toBe(true);
    expect(scans).toHaveBeenCalledTimes(1);
    scans.mockClear();
    const vnodes = new Set<number>([vnodeOf([1000n], [type('int8')])]);
    for (let group = 1001; group <= 1100; group++) {
      vnodes.add(vnodeOf([BigInt(group)], [type('int8')]));
      expect(table.prefixIsNew!([BigInt(group)])).toBe(true);
      expect([...table.scan({ prefix: [BigInt(group)] })]).toEqual([]);
      table.insert([BigInt(group), 'a', group]);
      expect(table.prefixIsNew!([BigInt(group)])).toBe(false);
      if (group % 10 === 0) store.commit(epochAt(group));
    }
    // One seek for each vnode the new groups fell in, the first time only.
    expect(scans).toHaveBeenCalledTimes(vnodes.size - 1);
    scans.mockClear();
    // Rows another writer added: each bound is read again, when its vnode is next read.
    store.rowsAddedElsewhere();
    expect(table.prefixIsNew!([2000n])).toBe(true);
    expect(table.prefixIsNew!([1050n])).toBe(false);
    expect(scans).toHaveBeenCalledTimes(new Set([vnodeOf([2000n], [type('int8')]), vnodeOf([1050n], [type('int8')])]).size);
    expect(table.prefixIsNew!([50n])).toBe(false);
    expect([...table.scan({ prefix: [50n] })]).toEqual([[50n, 'a', 50]]);
    await store.close();
  });

  it('cuts flagged vnodes into one key range per run', () => {
    const flags = new Uint8Array(256);
    for (const vnode of [0, 1, 2, 7, 100, 101, 255]) flags[vnode] = 1;
    expect(vnodeRunRanges(31, flags)).toEqual([vnodeRange(31, 0, 3), vnodeRange(31, 7, 8), vnodeRange(31, 100, 102), vnodeRange(31, 255, 256)]);
    // The last run ends at the table's end; no flag, no range; every flag, the whole table.
    expect(vnodeRunRanges(31, flags).at(-1)!.upper).toEqual(tableUpperBound(31));
    expect(vnodeRunRanges(31, new Uint8Array(256))).toEqual([]);
    const all = vnodeRunRanges(31, new Uint8Array(256).fill(1));
    expect(all).toHaveLength(1);
    expect(all[0]!.lower).toEqual(Buffer.concat([tableLowerBound(31), Buffer.from([0])]));
    expect(all[0]!.upper).toEqual(tableUpperBound(31));
  });

  it('refuses what its layout cannot serve', async () => {
    const store = createMemoryStateStore();
    const table = store.table(keyed);
    expect(() => [...table.scan({ start: [1n, 'a'], end: [2n, 'a'] })]).toThrow(/a scan between keys of two vnodes/);
    expect(() => [...table.scan({ end: [] })]).toThrow(/a scan between keys of two vnodes/);
    expect(() => table.deleteBelow!([5n])).toThrow(/a range delete of a table keyed by vnode/);
    expect(() => store.table({ ...keyed, vnodeColumns: undefined as unknown as readonly number[] })).toThrow(/reopened with different vnode columns/);
    expect(() => store.table({ tableId: 33, columnTypes, primaryKey: [0, 1], vnodeColumns: [2] })).toThrow(/a vnode column is not a key column/);
    await store.close();
  });
});
