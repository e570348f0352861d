// The stored row encoding round-trips every value representation of sql/value.ts exactly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Jsonb, parseJsonb } from '../sql/json.js';
import { Numeric } from '../sql/numeric.js';
import type { Row, Value } from '../sql/value.js';
import { ByteWriter } from './byte-writer.js';
import { decodeRow, encodeRow, ROW_TOMBSTONE } from './row-codec.js';

const scalar: fc.Arbitrary<Value> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.constantFrom(-0, 2 ** 31, -(2 ** 31) - 1, Infinity, NaN),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.bigInt({ min: -(2n ** 100n), max: 2n ** 100n }),
  fc.string({ maxLength: 60 }),
  fc.string({ minLength: 40, maxLength: 300, unit: 'grapheme' }),
  fc.uint8Array({ maxLength: 20 }),
  fc.record({ unscaled: fc.bigInt(), scale: fc.integer({ min: -5, max: 40 }) }).map((n) => new Numeric(n.unscaled, n.scale)),
  fc.constantFrom(new Numeric(0n, 0, 'nan'), new Numeric(0n, 0, 'inf'), new Numeric(0n, 0, '-inf')),
  fc.record({ months: fc.integer({ min: -1e6, max: 1e6 }), days: fc.integer({ min: -1e6, max: 1e6 }), micros: fc.integer({ min: -1e15, max: 1e15 }) }),
  fc.constantFrom('{"a": 1.50, "b": [1, 2, {"c": null}], "aa": "x"}', '[]', '12345678901234567890', '"s"').map((text) => parseJsonb(text)),
);
const value: fc.Arbitrary<Value> = fc.oneof(
  { weight: 8, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 4 }).map((elements) => ({ kind: 'array' as const, elements })) },
  { weight: 1, arbitrary: fc.array(fc.integer(), { minLength: 4, maxLength: 4 }).map((elements) => ({ kind: 'array' as const, elements, dims: [2, 2] })) },
);

describe('row codec', () => {
  it('round-trips random rows exactly', () => {
    fc.assert(
      fc.property(fc.array(value, { maxLength: 12 }), (row: Row) => {
        const writer = new ByteWriter(8);
        encodeRow(writer, row);
        const decoded = decodeRow(writer.copy());
        expect(decoded).toEqual(row);
        // -0 survives (toEqual treats -0 and 0 as different, but be explicit).
        row.forEach((item, index) => {
          if (Object.is(item, -0)) expect(Object.is(decoded![index], -0)).toBe(true);
          if (item instanceof Jsonb) expect((decoded![index] as Jsonb).toString()).toBe(item.toString());
        });
      }),
      { numRuns: 500 },
    );
  });

  it('marks tombstones with a leading zero byte', () => {
    expect(decodeRow(Buffer.from([ROW_TOMBSTONE]))).toBeUndefined();
  });

  it('keeps numeric scale (1.50 stays 1.50)', () => {
    const writer = new ByteWriter();
    encodeRow(writer, [new Numeric(150n, 2)]);
    const [decoded] = decodeRow(writer.copy())!;
    expect((decoded as Numeric).unscaled).toBe(150n);
    expect((decoded as Numeric).scale).toBe(2);
  });

  it('stores a numeric that fits 64 bits in ten bytes, at every edge of that form', () => {
    const writer = new ByteWriter();
    encodeRow(writer, [new Numeric(908000n, 3)]);
    // ROW_PUT, the column count, then the tag, the scale byte and eight bytes of unscaled value.
    expect(writer.length).toBe(2 + 10);
    const edges = [
      new Numeric((1n << 63n) - 1n, 127),
      new Numeric(-(1n << 63n), -128),
      new Numeric(1n << 63n, 0),
      new Numeric(-(1n << 63n) - 1n, 2),
      new Numeric(5n, 128),
      new Numeric(-5n, -129),
      new Numeric(0n, 0),
    ];
    const all = new ByteWriter();
    encodeRow(all, edges);
    const decoded = decodeRow(all.copy())! as Numeric[];
    expect(decoded.map((n) => [n.unscaled, n.scale, n.special])).toEqual(edges.map((n) => [n.unscaled, n.scale, undefined]));
  });

  it('writes int8, numeric and float8 bytes as the Buffer writers do, around 2^53 and 2^63', () => {
    // Each value alone in a row: ROW_PUT, count 1, the tag, then the payload written here by Buffer.
    const edges = [0n, 1n, -1n, 255n, -256n, 2n ** 31n, -(2n ** 32n) - 7n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n, -(2n ** 53n), 2n ** 53n + 1n, 2n ** 62n + 12345n, 2n ** 63n - 1n, -(2n ** 63n)];
    for (const edge of edges) {
      const writer = new ByteWriter(4);
      encodeRow(writer, [edge]);
      const expected = Buffer.alloc(11);
      expected.set([1, 1, 5]);
      expected.writeBigInt64LE(edge, 3);
      expect(writer.copy().equals(expected), String(edge)).toBe(true);
      const numeric = new ByteWriter(4);
      encodeRow(numeric, [new Numeric(edge, 3)]);
      const expectedNumeric = Buffer.alloc(12);
      expectedNumeric.set([1, 1, 13, 3]);
      expectedNumeric.writeBigInt64LE(edge, 4);
      expect(numeric.copy().equals(expectedNumeric), `numeric ${String(edge)}`).toBe(true);
    }
    for (const double of [1.5, -0.1, 1_436_918_400_000_000, 2 ** 53 + 2, -1e300, Number.MIN_VALUE, Infinity, -Infinity, NaN]) {
      const writer = new ByteWriter(4);
      encodeRow(writer, [double]);
      const expected = Buffer.alloc(11);
      expected.set([1, 1, 4]);
      expected.writeDoubleLE(double, 3);
      expect(writer.copy().equals(expected), String(double)).toBe(true);
    }
  });

  it('reads numerics written in the decimal text form', () => {
    // ROW_PUT, one column, TAG_NUMERIC (9), not special, scale 2 (int32 LE), '150' as text.
    const bytes = Buffer.from([1, 1, 9, 0, 2, 0, 0, 0, 3, 0x31, 0x35, 0x30]);
    const [decoded] = decodeRow(bytes)!;
    expect((decoded as Numeric).unscaled).toBe(150n);
    expect((decoded as Numeric).scale).toBe(2);
  });
});
