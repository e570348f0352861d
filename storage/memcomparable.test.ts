// Memcomparable keys, fast and without a server: for random pairs of values, the byte order of the
// encodings equals SQL's compareValues (sql/compare.ts), including equality of values SQL calls
// equal. The types here are those where compareValues and a real PostgreSQL agree (the pairwise
// check against PostgreSQL itself is test/storage/memcomparable-postgres.test.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareValues } from '../sql/compare.js';
import { Numeric } from '../sql/numeric.js';
import { type, type DataType } from '../sql/types.js';
import type { Value } from '../sql/value.js';
import { ByteWriter } from './byte-writer.js';
import { encodeValue } from './memcomparable.js';

function encode(value: Value, dataType: DataType): Buffer {
  const writer = new ByteWriter(16);
  encodeValue(writer, value, dataType);
  return writer.copy();
}

const text = fc.string({ unit: fc.constantFrom('a', 'b', 'z', ' ', '\u0000', 'é', '€', '😀', '\uffff'), maxLength: 6 });
const cases: [string, DataType, fc.Arbitrary<Value>][] = [
  ['int2', type('int2'), fc.integer({ min: -32768, max: 32767 })],
  ['int4', type('int4'), fc.integer()],
  ['int8', type('int8'), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })],
  ['float8', type('float8'), fc.oneof(fc.double(), fc.constantFrom(0, -0, NaN, Infinity, -Infinity))],
  ['numeric', type('numeric'), fc.oneof(
    fc.record({ unscaled: fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }), scale: fc.integer({ min: 0, max: 20 }) }).map((n) => new Numeric(n.unscaled, n.scale)),
    fc.record({ unscaled: fc.bigInt({ min: -100n, max: 100n }), scale: fc.integer({ min: 0, max: 3 }) }).map((n) => new Numeric(n.unscaled, n.scale)),
    fc.constantFrom(new Numeric(0n, 0, 'nan'), new Numeric(0n, 0, 'inf'), new Numeric(0n, 0, '-inf')),
  )],
  ['text', type('text'), text],
  ['bpchar', type('bpchar'), fc.tuple(text, fc.nat(2)).map(([t, spaces]) => t + ' '.repeat(spaces))],
  ['bytea', type('bytea'), fc.uint8Array({ maxLength: 6, max: 3 })],
  ['timestamp', type('timestamp'), fc.oneof(fc.integer({ min: -(2 ** 53), max: 2 ** 53 }), fc.constantFrom(Infinity, -Infinity))],
  ['interval', type('interval'), fc.record({ months: fc.integer({ min: -40, max: 40 }), days: fc.integer({ min: -90, max: 90 }), micros: fc.integer({ min: -1e12, max: 1e12 }) })],
  ['bool', type('bool'), fc.boolean()],
];

describe('memcomparable byte order equals compareValues', () => {
  for (const [name, dataType, values] of cases) {
    it(name, () => {
      fc.assert(
        fc.property(values, values, (a, b) => {
          const sql = Math.sign(compareValues(a, b, dataType));
          const bytes = Math.sign(Buffer.compare(encode(a, dataType), encode(b, dataType)));
          expect(bytes).toBe(sql);
        }),
        { numRuns: 1000 },
      );
    });
  }

  it('sorts NULL after every value', () => {
    fc.assert(
      fc.property(fc.integer(), (value) => {
        expect(Buffer.compare(encode(value, type('int4')), encode(null, type('int4')))).toBe(-1);
      }),
    );
  });

  it('orders composite keys column by column (a shorter prefix first)', () => {
    const writer = new ByteWriter();
    const key = (values: Value[], types: DataType[]) => {
      writer.reset();
      values.forEach((value, index) => encodeValue(writer, value, types[index]!));
      return writer.copy();
    };
    const types = [type('text'), type('int4')];
    expect(Buffer.compare(key(['a'], types), key(['a', -5], types))).toBe(-1);
    expect(Buffer.compare(key(['a', 5], types), key(['ab', -5], types))).toBe(-1);
    expect(Buffer.compare(key(['a\u0000', 1], types), key(['a', 2], types))).toBe(1);
  });
});
