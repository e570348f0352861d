// The resolved hashers (sql/compare.ts hasherOf, row-hash.ts keyHasher) against the per-value ones
// they replace on hot paths: hasherOf(type)(v) === hashValue(v, type) | 0 and keyHasher(types)(key)
// === hashKey(key, types) for values of every width and edge (int32 / 2^53 / int64 bounds, NULL,
// NaN, infinities, text). The int8 hash is stable (it may place keys): a recomputation with the
// bigint arithmetic of the original hashBigInt gives the same values.

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { hashValue, hasherOf } from '../../../sql/functions.js';
import { type } from '../../../sql/types.js';
import type { Value } from '../../../sql/value.js';
import { Numeric } from '../../../sql/numeric.js';
import { hashKey, keyHasher, KeyMap } from '../row-hash.js';

// The original int8 hash, recomputed with bigint comparisons (sql/compare.ts before the Number fast path).
function mix(hash: number, value: number): number {
  return Math.imul(hash ^ value, 0x01000193) >>> 0;
}
function finalize(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
function referenceInt8(value: bigint): number {
  if (value >= -0x80000000n && value <= 0x7fffffffn) return finalize(mix(0x811c9dc5, Number(value) | 0));
  if (value >= -(2n ** 63n) && value < 2n ** 63n) {
    const low = Number(BigInt.asUintN(32, value));
    const high = Number(BigInt.asIntN(32, value >> 32n));
    return finalize(mix(mix(0x9e3779b9, low | 0), high | 0));
  }
  throw new Error('outside int8');
}

const INT8_EDGES = [0n, 1n, -1n, 2n ** 31n - 1n, 2n ** 31n, -(2n ** 31n), -(2n ** 31n) - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) + 1n, -(2n ** 53n), -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n)];
const int8Values = fc.oneof(fc.constantFrom(...INT8_EDGES), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }));

describe('resolved hashers', () => {
  it('int8 hashes equal the original bigint computation', () => {
    for (const value of INT8_EDGES) expect(hashValue(value, type('int8')), String(value)).toBe(referenceInt8(value));
    fc.assert(
      fc.property(int8Values, (value) => {
        expect(hashValue(value, type('int8'))).toBe(referenceInt8(value));
        expect(hasherOf(type('int8'))(value)).toBe(referenceInt8(value) | 0);
      }),
      { numRuns: 2000 },
    );
  });

  it('hasherOf(type)(v) is hashValue(v, type) | 0 for every type it resolves', () => {
    const cases: [string, Value[]][] = [
      ['int2', [0, 1, -1, 32767, -32768]],
      ['int4', [0, 7, -7, 2147483647, -2147483648]],
      ['date', [0, -1, 9000, Infinity, -Infinity]],
      ['timestamp', [0, 8.1e14, -8.1e14, 2 ** 53 - 1, -(2 ** 53) + 1, Infinity, -Infinity]],
      ['timestamptz', [1, 4294967296, -4294967297]],
      ['text', ['', 'a', 'ab  ', 'héllo', '日本']],
      ['varchar', ['x', 'y']],
      ['bpchar', ['ab  ', 'ab']],
      ['float8', [0, -0, NaN, Infinity, 1.5]],
      ['numeric', [Numeric.parse('1.50'), Numeric.parse('1.5'), Numeric.NaN]],
      ['bool', [true, false]],
    ];
    for (const [name, values] of cases) {
      const t = type(name as never);
      for (const value of values) expect(hasherOf(t)(value), `${name} ${String(value)}`).toBe(hashValue(value, t) | 0);
    }
  });

  it('keyHasher(types)(key) equals hashKey(key, types) for one, two and three columns with NULLs', () => {
    const shapes = [[type('int8')], [type('int8'), type('timestamp')], [type('int4'), type('text'), type('int8')]];
    const column = (t: ReturnType<typeof type>): fc.Arbitrary<Value> => {
      const base: fc.Arbitrary<Value> = t.name === 'int8' ? int8Values : t.name === 'text' ? fc.string() : fc.integer();
      return fc.oneof(base, fc.constant(null));
    };
    for (const types of shapes) {
      const hasher = keyHasher(types);
      fc.assert(
        fc.property(fc.tuple(...types.map(column)), (key) => {
          expect(hasher(key)).toBe(hashKey(key, types));
        }),
        { numRuns: 500 },
      );
    }
  });

  it('a KeyMap finds every key it holds, int8 keys beyond 2^53 too', () => {
    const map = new KeyMap<number>([type('int8'), type('timestamp')]);
    const keys = INT8_EDGES.flatMap((value, i) => [[value, i] as Value[], [value, null] as Value[]]);
    keys.forEach((key, i) => map.add(key, i));
    keys.forEach((key, i) => expect(map.get([...key])).toBe(i));
    expect(map.get([2n ** 53n + 2n, 0])).toBeUndefined();
  });
});
