// ByteWriter's 64-bit writes (safe-integer halves, typed-array scratch past 2^53) against Node's
// own BigInt Buffer writers as the oracle, over the whole int64 / uint64 range.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteWriter } from './byte-writer.js';

const edges = [0n, 1n, -1n, 2n ** 32n - 1n, 2n ** 32n, -(2n ** 32n), 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, -(2n ** 63n), 2n ** 63n - 1n];
const int64 = fc.oneof(fc.constantFrom(...edges), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }));

function written(write: (writer: ByteWriter) => void): Buffer {
  const writer = new ByteWriter(4);
  writer.byte(0xaa); // an offset that is not 8-aligned, and growth past the first buffer
  write(writer);
  return Buffer.from(writer.view().subarray(1));
}

describe('ByteWriter 64-bit writes', () => {
  it('int64LittleEndian equals writeBigInt64LE', () => {
    fc.assert(
      fc.property(int64, (value) => {
        const expected = Buffer.alloc(8);
        expected.writeBigInt64LE(value);
        expect(written((writer) => writer.int64LittleEndian(value))).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('uint64BigEndian equals writeBigUInt64BE', () => {
    fc.assert(
      fc.property(int64, (signed) => {
        const value = BigInt.asUintN(64, signed);
        const expected = Buffer.alloc(8);
        expected.writeBigUInt64BE(value);
        expect(written((writer) => writer.uint64BigEndian(value))).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('int64BigEndianSignFlipped equals the sign-flipped unsigned big-endian value', () => {
    fc.assert(
      fc.property(int64, (value) => {
        const expected = Buffer.alloc(8);
        expected.writeBigUInt64BE(BigInt.asUintN(64, value ^ (1n << 63n)));
        expect(written((writer) => writer.int64BigEndianSignFlipped(value))).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('ByteWriter latin1', () => {
  it('latin1 (every length 0..40, every byte value) equals Buffer latin1 decoding and round-trips through writeLatin1', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 40 }), fc.nat({ max: 5 }), (bytes, prefix) => {
        const writer = new ByteWriter(4);
        for (let index = 0; index < prefix; index++) writer.byte(0x41 + index);
        for (const byte of bytes) writer.byte(byte);
        const text = writer.latin1(prefix);
        expect(text).toBe(Buffer.from(bytes).toString('latin1'));
        const back = new ByteWriter(4);
        back.writeLatin1(text);
        expect(Buffer.from(back.view())).toEqual(Buffer.from(bytes));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('ByteWriter bytes', () => {
  it('appends any range of a source (up to 16 bytes by a loop, longer by TypedArray.set) exactly, growing as needed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.uint8Array({ minLength: 0, maxLength: 40 }), fc.nat(), fc.nat()), { maxLength: 12 }),
        fc.boolean(),
        (pieces, plainArrays) => {
          const writer = new ByteWriter(4);
          const expected: Buffer[] = [];
          for (const [bytes, a, b] of pieces) {
            const source = plainArrays ? bytes : Buffer.from(bytes);
            const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
            const end = start + (bytes.length === 0 ? 0 : b % (bytes.length - start + 1));
            writer.bytes(source, start, end);
            expected.push(Buffer.from(bytes.subarray(start, end)));
          }
          expect(Buffer.from(writer.view())).toEqual(Buffer.concat(expected));
        },
      ),
      { numRuns: 2000 },
    );
  });
});
