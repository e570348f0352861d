// Hash maps keyed by SQL values (group keys, join keys, DISTINCT rows), with PostgreSQL's
// grouping semantics: NULLs group together, equality is compareValues() === 0 for the key types,
// hashes from hashValue(). The index is typed arrays (HashIndex), so a probe allocates nothing.

import type { DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';
import { compareValues, hashValue, hasherOf } from '../../sql/functions.js';

const NULL_HASH = 0x5bd1e995;

/** `hashKey` for keys of fixed types, the per-type hash functions resolved once. */
export type KeyHasher = (key: readonly Value[]) => number;

const hashersByType = new WeakMap<DataType, KeyHasher>();
const hashersByTypes = new WeakMap<readonly DataType[], KeyHasher>();

/** The hasher of keys of these types (equal to hashKey(key, types)); cached per type list (per type for one column). */
export function keyHasher(types: readonly DataType[]): KeyHasher {
  const cached = types.length === 1 ? hashersByType.get(types[0]!) : hashersByTypes.get(types);
  if (cached !== undefined) return cached;
  const hashers = types.map(hasherOf);
  let hasher: KeyHasher;
  if (hashers.length === 1) {
    const first = hashers[0]!;
    hasher = (key) => {
      const a = key[0]!;
      return (17 * 31 + (a === null ? NULL_HASH : first(a))) | 0;
    };
    hashersByType.set(types[0]!, hasher);
    return hasher;
  }
  if (hashers.length === 2) {
    const first = hashers[0]!;
    const second = hashers[1]!;
    hasher = (key) => {
      const a = key[0]!;
      const b = key[1]!;
      const hash = (17 * 31 + (a === null ? NULL_HASH : first(a))) | 0;
      return (Math.imul(hash, 31) + (b === null ? NULL_HASH : second(b))) | 0;
    };
  } else {
    hasher = (key) => {
      let hash = 17;
      for (let i = 0; i < key.length; i++) {
        const value = key[i]!;
        hash = (Math.imul(hash, 31) + (value === null ? NULL_HASH : hashers[i]!(value))) | 0;
      }
      return hash;
    };
  }
  hashersByTypes.set(types, hasher);
  return hasher;
}

export function hashKey(key: readonly Value[], types: readonly DataType[]): number {
  let hash = 17;
  for (let i = 0; i < key.length; i++) {
    const value = key[i]!;
    const h = value === null ? NULL_HASH : hashValue(value, types[i]!);
    hash = (Math.imul(hash, 31) + h) | 0;
  }
  return hash;
}

/** Grouping equality: NULL equals NULL. */
export function keysEqual(a: readonly Value[], b: readonly Value[], types: readonly DataType[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === null || y === null) {
      if (x !== y) return false;
      continue;
    }
    if (x !== y && compareValues(x, y, types[i]!) !== 0) return false;
  }
  return true;
}

/**
 * A chained hash index over positions 0, 1, 2...: typed arrays instead of a Map of arrays, so a
 * build allocates nothing per entry and a probe nothing at all (a Map with a million number keys
 * and small bucket arrays costs seconds in V8). Positions are handed out in insertion order.
 */
export class HashIndex {
  private head: Int32Array;
  private next: Int32Array;
  private hashes: Int32Array;
  private mask: number;
  count = 0;

  constructor(expected = 16) {
    let capacity = 16;
    while (capacity < expected * 2) capacity <<= 1;
    this.head = new Int32Array(capacity).fill(-1);
    this.mask = capacity - 1;
    this.next = new Int32Array(Math.max(expected, 16));
    this.hashes = new Int32Array(Math.max(expected, 16));
  }

  /** Adds an entry with this hash; returns its position. */
  add(hash: number): number {
    const position = this.count++;
    if (position >= this.next.length) {
      const next = new Int32Array(this.next.length * 2);
      next.set(this.next);
      this.next = next;
      const hashes = new Int32Array(this.hashes.length * 2);
      hashes.set(this.hashes);
      this.hashes = hashes;
    }
    this.hashes[position] = hash;
    if (this.count * 2 > this.head.length) this.grow();
    else this.link(position, hash);
    return position;
  }

  /** The newest position with this hash, or -1. */
  first(hash: number): number {
    for (let j = this.head[hash & this.mask]!; j >= 0; j = this.next[j]!) if (this.hashes[j] === hash) return j;
    return -1;
  }

  /** The next older position with this hash after `position`, or -1. */
  following(position: number, hash: number): number {
    for (let j = this.next[position]!; j >= 0; j = this.next[j]!) if (this.hashes[j] === hash) return j;
    return -1;
  }

  private link(position: number, hash: number): void {
    const slot = hash & this.mask;
    this.next[position] = this.head[slot]!;
    this.head[slot] = position;
  }

  private grow(): void {
    this.head = new Int32Array(this.head.length * 2).fill(-1);
    this.mask = this.head.length - 1;
    for (let position = 0; position < this.count; position++) this.link(position, this.hashes[position]!);
  }
}

/** Insertion-ordered map from value tuples to V. */
export class KeyMap<V> {
  private readonly index = new HashIndex();
  readonly keys: Value[][] = [];
  readonly values: V[] = [];
  /** hashKey for these types, resolved once. */
  readonly hash: KeyHasher;

  constructor(private readonly types: readonly DataType[]) {
    this.hash = keyHasher(types);
  }

  get size(): number {
    return this.keys.length;
  }

  /** Position of the key, or -1. */
  indexOf(key: readonly Value[], hash = this.hash(key)): number {
    for (let j = this.index.first(hash); j >= 0; j = this.index.following(j, hash)) {
      if (keysEqual(this.keys[j]!, key, this.types)) return j;
    }
    return -1;
  }

  get(key: readonly Value[], hash = this.hash(key)): V | undefined {
    const index = this.indexOf(key, hash);
    return index < 0 ? undefined : this.values[index];
  }

  /** Adds a key known to be absent (after indexOf returned -1); returns its position. */
  add(key: Value[], value: V, hash = this.hash(key)): number {
    this.index.add(hash);
    this.keys.push(key);
    this.values.push(value);
    return this.keys.length - 1;
  }

  set(key: Value[], value: V): void {
    const hash = this.hash(key);
    const index = this.indexOf(key, hash);
    if (index >= 0) this.values[index] = value;
    else this.add(key, value, hash);
  }
}
