// Hash maps keyed by SQL values (group keys, join keys, DISTINCT rows), with PostgreSQL's
// grouping semantics: NULLs group together, equality is compareValues() === 0 for the key types,
// hashes from hashValue(). Buckets hold parallel arrays so a probe allocates nothing.

import type { DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';
import { compareValues, hashValue } from '../../sql/functions.js';

const NULL_HASH = 0x5bd1e995;

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

/** Insertion-ordered map from value tuples to V. */
export class KeyMap<V> {
  private readonly buckets = new Map<number, number[]>();
  readonly keys: Value[][] = [];
  readonly values: V[] = [];

  constructor(private readonly types: readonly DataType[]) {}

  get size(): number {
    return this.keys.length;
  }

  /** Position of the key, or -1. */
  indexOf(key: readonly Value[], hash = hashKey(key, this.types)): number {
    const bucket = this.buckets.get(hash);
    if (bucket === undefined) return -1;
    for (let i = 0; i < bucket.length; i++) {
      const index = bucket[i]!;
      if (keysEqual(this.keys[index]!, key, this.types)) return index;
    }
    return -1;
  }

  get(key: readonly Value[], hash = hashKey(key, this.types)): V | undefined {
    const index = this.indexOf(key, hash);
    return index < 0 ? undefined : this.values[index];
  }

  /** Adds a key known to be absent (after indexOf returned -1); returns its position. */
  add(key: Value[], value: V, hash = hashKey(key, this.types)): number {
    let bucket = this.buckets.get(hash);
    if (bucket === undefined) {
      bucket = [];
      this.buckets.set(hash, bucket);
    }
    bucket.push(this.keys.length);
    this.keys.push(key);
    this.values.push(value);
    return this.keys.length - 1;
  }

  set(key: Value[], value: V): void {
    const hash = hashKey(key, this.types);
    const index = this.indexOf(key, hash);
    if (index >= 0) this.values[index] = value;
    else this.add(key, value, hash);
  }
}
