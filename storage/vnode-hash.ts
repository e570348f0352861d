// Virtual nodes: a key's hash bucket out of 256, the vnode byte of the state tables' key layout
// (mvcc-key.ts, DESIGN.md section 2). Equal keys as the state tables see them land in one vnode, in
// every thread and every process: integers, dates, timestamps and booleans hash their numeric
// value (an int8 as a bigint or a number alike), text its UTF-16 code units, and every other type
// its memcomparable encoding (numeric 1.0 = 1.00, bpchar without its trailing spaces), each word
// mixed as MurmurHash3 mixes its blocks. A keyed fragment's exchange routes rows by the same hash
// (executor/stream/parallel/vnode.ts), so a row's owner and its state's vnode byte agree.

import { finalize32 } from '../sql/compare.js';
import type { DataType } from '../sql/types.js';
import type { Value } from '../sql/value.js';
import { ByteWriter } from './byte-writer.js';
import { encodeValue } from './memcomparable.js';

export const VNODE_COUNT = 256;

const scratch = new ByteWriter(256);
const float = new Float64Array(1);
const floatWords = new Int32Array(float.buffer);
const big = new BigInt64Array(1);
const bigWords = new Int32Array(big.buffer);
const NULL_WORD = 0x5bd1e995;
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** How a key column hashes: its value as a number, as text, or by its memcomparable bytes. */
const enum Kind {
  Number,
  Text,
  Encoded,
}

function kindOf(type: DataType): Kind {
  switch (type.name) {
    case 'int2':
    case 'int4':
    case 'int8':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
    case 'bool':
      return Kind.Number;
    case 'text':
    case 'varchar':
      return Kind.Text;
    default:
      return Kind.Encoded;
  }
}

function mix(hash: number, word: number): number {
  let k = Math.imul(word, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  const h = hash ^ k;
  return (Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64) | 0;
}

function finish(hash: number): number {
  return (finalize32(hash) >>> 0) % VNODE_COUNT;
}

function mixNumber(hash: number, value: number): number {
  float[0] = value === 0 ? 0 : value;
  return mix(mix(hash, floatWords[0]!), floatWords[1]!);
}

function mixValue(hash: number, value: Value, type: DataType, kind: Kind): number {
  if (value === null) return mix(hash, NULL_WORD);
  switch (kind) {
    case Kind.Number:
      if (typeof value === 'number') return mixNumber(hash, value);
      if (typeof value === 'boolean') return mixNumber(hash, value ? 1 : 0);
      if (typeof value === 'bigint') {
        if (value >= MIN_SAFE && value <= MAX_SAFE) return mixNumber(hash, Number(value));
        big[0] = value;
        return mix(mix(mix(hash, NULL_WORD), bigWords[0]!), bigWords[1]!);
      }
      break;
    case Kind.Text:
      if (typeof value === 'string') {
        let h = mix(hash, value.length);
        for (let i = 0; i < value.length; i++) h = mix(h, value.charCodeAt(i));
        return h;
      }
      break;
    case Kind.Encoded:
      break;
  }
  scratch.reset();
  encodeValue(scratch, value, type);
  let h = mix(hash, scratch.length);
  for (let i = 0; i < scratch.length; i++) h = mix(h, scratch.buffer[i]!);
  return h;
}

/** Hashes keys of fixed column types to vnodes. */
export class VnodeHasher {
  private readonly kinds: readonly Kind[];

  constructor(private readonly types: readonly DataType[]) {
    this.kinds = types.map(kindOf);
  }

  /** The vnode of the key made of `row`'s values at `columns`. */
  ofColumns(row: readonly Value[], columns: readonly number[]): number {
    let hash = 0;
    for (let i = 0; i < columns.length; i++) hash = mixValue(hash, row[columns[i]!]!, this.types[i]!, this.kinds[i]!);
    return finish(hash);
  }

  of(key: readonly Value[]): number {
    let hash = 0;
    for (let i = 0; i < key.length; i++) hash = mixValue(hash, key[i]!, this.types[i]!, this.kinds[i]!);
    return finish(hash);
  }
}

/** The vnode of a key (the values of a distribution key, with their types). */
export function vnodeOf(key: readonly Value[], types: readonly DataType[]): number {
  return new VnodeHasher(types).of(key);
}
