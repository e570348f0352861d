// A growable byte buffer for building keys, rows and write batches without a Buffer per value:
// callers reset() and reuse one writer, and copy out (`copy()`) or view (`view()`) the result.

/** Node's Buffer and plain Uint8Array (their typings disagree under TypeScript 5.9). */
export type Bytes = Uint8Array | Buffer;

const INITIAL_CAPACITY = 256;

const fromCharCode = String.fromCharCode;

/**
 * Bytes [s, s + n) as a flat latin1 string for n <= 12: one allocation, and a flat string hashes
 * fast as a Map key (a string built by += is a chain of allocations).
 */
function shortLatin1(b: Buffer, s: number, n: number): string {
  switch (n) {
    case 0:
      return '';
    case 1:
      return fromCharCode(b[s]!);
    case 2:
      return fromCharCode(b[s]!, b[s + 1]!);
    case 3:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!);
    case 4:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!);
    case 5:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!);
    case 6:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!, b[s + 5]!);
    case 7:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!, b[s + 5]!, b[s + 6]!);
    case 8:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!, b[s + 5]!, b[s + 6]!, b[s + 7]!);
    case 9:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!, b[s + 5]!, b[s + 6]!, b[s + 7]!, b[s + 8]!);
    case 10:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!, b[s + 5]!, b[s + 6]!, b[s + 7]!, b[s + 8]!, b[s + 9]!);
    case 11:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!, b[s + 5]!, b[s + 6]!, b[s + 7]!, b[s + 8]!, b[s + 9]!, b[s + 10]!);
    case 12:
      return fromCharCode(b[s]!, b[s + 1]!, b[s + 2]!, b[s + 3]!, b[s + 4]!, b[s + 5]!, b[s + 6]!, b[s + 7]!, b[s + 8]!, b[s + 9]!, b[s + 10]!, b[s + 11]!);
    default:
      return b.toString('latin1', s, s + n);
  }
}

/** Reused argument arrays for latin1() of 13..24 bytes, one per length (index = length). */
const MEDIUM_CODES: number[][] = Array.from({ length: 25 }, (_, length) => new Array<number>(length).fill(0));

/** Scratch for 64-bit BigInt writes: a typed array converts without BigInt arithmetic. */
const SCRATCH = new ArrayBuffer(8);
const INT64_SCRATCH = new BigInt64Array(SCRATCH);
const UINT64_SCRATCH = new BigUint64Array(SCRATCH);
const FLOAT64_SCRATCH = new Float64Array(SCRATCH);
const SCRATCH_BYTES = new Uint8Array(SCRATCH);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class ByteWriter {
  buffer: Buffer;
  length = 0;
  private readonly scratch = new DataView(new ArrayBuffer(8));

  constructor(capacity = INITIAL_CAPACITY) {
    this.buffer = Buffer.allocUnsafe(capacity);
  }

  reset(): void {
    this.length = 0;
  }

  ensure(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = Buffer.allocUnsafe(capacity);
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  byte(value: number): void {
    if (this.length >= this.buffer.length) this.ensure(1);
    this.buffer[this.length++] = value;
  }

  // The 32-bit writers store their bytes themselves: Buffer's writeUInt32LE and the like check
  // their arguments and bounds on every call, and a batch makes several such calls per row.

  uint32BigEndian(value: number): void {
    this.ensure(4);
    const buffer = this.buffer;
    const at = this.length;
    buffer[at] = value >>> 24;
    buffer[at + 1] = value >>> 16;
    buffer[at + 2] = value >>> 8;
    buffer[at + 3] = value;
    this.length = at + 4;
  }

  uint32LittleEndian(value: number): void {
    this.ensure(4);
    this.patchUint32LittleEndian(this.length, value);
    this.length += 4;
  }

  /** Overwrites 4 bytes already written (a length filled in afterwards). */
  patchUint32LittleEndian(offset: number, value: number): void {
    const buffer = this.buffer;
    buffer[offset] = value;
    buffer[offset + 1] = value >>> 8;
    buffer[offset + 2] = value >>> 16;
    buffer[offset + 3] = value >>> 24;
  }

  int32LittleEndian(value: number): void {
    this.uint32LittleEndian(value | 0);
  }

  uint64BigEndian(value: bigint): void {
    this.ensure(8);
    const number = Number(value);
    if (number >= 0 && number <= Number.MAX_SAFE_INTEGER) {
      // Two 32-bit writes: Buffer's BigInt writers allocate several BigInts per call.
      this.uint32Pair(Math.floor(number / 0x100000000), number >>> 0);
      return;
    }
    // Past 2^53 (epochs, time-based row ids): through a typed array, which stores a BigInt
    // without the BigInt arithmetic of Buffer's writers.
    UINT64_SCRATCH[0] = value;
    this.scratchBigEndian(0);
  }

  /** A signed 64-bit value big-endian with its sign bit flipped (memcomparable int8 order). */
  int64BigEndianSignFlipped(value: bigint): void {
    INT64_SCRATCH[0] = value;
    this.scratchBigEndian(0x80);
  }

  /** The 8 scratch bytes (little-endian in memory) written big-endian, `flip` xored into the first. */
  private scratchBigEndian(flip: number): void {
    this.ensure(8);
    const buffer = this.buffer;
    const at = this.length;
    const bytes = SCRATCH_BYTES;
    if (LITTLE_ENDIAN) {
      buffer[at] = bytes[7]! ^ flip;
      for (let index = 1; index < 8; index++) buffer[at + index] = bytes[7 - index]!;
    } else {
      buffer[at] = bytes[0]! ^ flip;
      for (let index = 1; index < 8; index++) buffer[at + index] = bytes[index]!;
    }
    this.length = at + 8;
  }

  /** A 64-bit big-endian value given as its high and low 32 bits (each taken as unsigned). */
  uint32Pair(high: number, low: number): void {
    this.ensure(8);
    const buffer = this.buffer;
    const at = this.length;
    buffer[at] = high >>> 24;
    buffer[at + 1] = high >>> 16;
    buffer[at + 2] = high >>> 8;
    buffer[at + 3] = high;
    buffer[at + 4] = low >>> 24;
    buffer[at + 5] = low >>> 16;
    buffer[at + 6] = low >>> 8;
    buffer[at + 7] = low;
    this.length = at + 8;
  }

  int64LittleEndian(value: bigint): void {
    this.ensure(8);
    const number = Number(value);
    if (number >= -Number.MAX_SAFE_INTEGER && number <= Number.MAX_SAFE_INTEGER) {
      this.safeInt64LittleEndian(number);
      return;
    }
    INT64_SCRATCH[0] = value;
    const buffer = this.buffer;
    const at = this.length;
    const bytes = SCRATCH_BYTES;
    for (let index = 0; index < 8; index++) buffer[at + index] = bytes[LITTLE_ENDIAN ? index : 7 - index]!;
    this.length = at + 8;
  }

  /** A safe integer (|value| <= 2^53 - 1) as 8 bytes of two's complement, little-endian, without a BigInt. */
  safeInt64LittleEndian(value: number): void {
    this.ensure(8);
    // Two's complement from the safe integer: low word, then the high word (floor division).
    const buffer = this.buffer;
    const at = this.length;
    const low = value >>> 0;
    const high = Math.floor(value / 0x100000000) | 0;
    buffer[at] = low;
    buffer[at + 1] = low >>> 8;
    buffer[at + 2] = low >>> 16;
    buffer[at + 3] = low >>> 24;
    buffer[at + 4] = high;
    buffer[at + 5] = high >>> 8;
    buffer[at + 6] = high >>> 16;
    buffer[at + 7] = high >>> 24;
    this.length = at + 8;
  }

  float64LittleEndian(value: number): void {
    this.ensure(8);
    // Through the scratch: Buffer's writeDoubleLE checks its arguments and the bounds on every call.
    FLOAT64_SCRATCH[0] = value;
    const buffer = this.buffer;
    const at = this.length;
    const bytes = SCRATCH_BYTES;
    for (let index = 0; index < 8; index++) buffer[at + index] = bytes[LITTLE_ENDIAN ? index : 7 - index]!;
    this.length = at + 8;
  }

  /** The 8 bytes of a float64 (big endian) into the scratch view, for order-preserving encodings. */
  float64Bits(value: number): DataView {
    this.scratch.setFloat64(0, value);
    return this.scratch;
  }

  bytes(source: Bytes, start = 0, end = source.length): void {
    const count = end - start;
    this.ensure(count);
    if (count <= 16) {
      // A table prefix (5 bytes) or an epoch suffix (8) per row of a batch: a loop is 2-3x
      // cheaper than TypedArray.set's call for so few bytes.
      const buffer = this.buffer;
      let offset = this.length;
      for (let index = start; index < end; index++) buffer[offset++] = source[index]!;
      this.length = offset;
      return;
    }
    this.buffer.set(start === 0 && end === source.length ? source : source.subarray(start, end), this.length);
    this.length += count;
  }

  /** UTF-8 bytes of `text`; returns the number of bytes written. */
  utf8(text: string): number {
    const count = text.length;
    // ASCII fast path: one byte per code unit, no native call.
    this.ensure(count);
    const buffer = this.buffer;
    let offset = this.length;
    let index = 0;
    for (; index < count; index++) {
      const code = text.charCodeAt(index);
      if (code >= 0x80) break;
      buffer[offset++] = code;
    }
    if (index === count) {
      this.length = offset;
      return count;
    }
    this.length = offset;
    const rest = text.slice(index);
    const restBytes = Buffer.byteLength(rest, 'utf8');
    this.ensure(restBytes);
    this.buffer.write(rest, this.length, restBytes, 'utf8');
    this.length += restBytes;
    return index + restBytes;
  }

  /** A copy of the bytes written so far. */
  copy(): Buffer {
    const copy = Buffer.allocUnsafe(this.length);
    copy.set(this.buffer.subarray(0, this.length));
    return copy;
  }

  /** A view of the bytes written so far; valid until the next write or reset. */
  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /** The bytes written so far as a latin1 string (one char per byte): a Map key with byte order. */
  latin1(start = 0): string {
    const end = this.length;
    // Short keys (the common case): cheaper in JS than through the native call.
    const count = end - start;
    if (count <= 12) return shortLatin1(this.buffer, start, count);
    if (count > 24) return this.buffer.toString('latin1', start, end);
    // 13..24 bytes (composite keys of two int8 columns and the like): one fromCharCode over a
    // reused array of exactly that length, so the result is one flat string. A `+=` loop made a
    // chain of ConsStrings (32 bytes each, 384 bytes for a 23-byte key) that Map keys keep as is,
    // and it was about twice as slow with the Map lookup (node 20: 342-375 vs 149-169 ns).
    const codes = MEDIUM_CODES[count]!;
    const buffer = this.buffer;
    for (let index = 0; index < count; index++) codes[index] = buffer[start + index]!;
    return fromCharCode.apply(null, codes);
  }

  /** Appends the bytes of a latin1 string made by latin1(). */
  writeLatin1(text: string): void {
    const count = text.length;
    this.ensure(count);
    // The native write pays off from about 24 characters (node 20: 36 characters 0.25 vs 0.48 us,
    // 16 characters 0.25 vs 0.18 us).
    if (count > 24) {
      this.buffer.write(text, this.length, count, 'latin1');
    } else {
      const buffer = this.buffer;
      let offset = this.length;
      for (let index = 0; index < count; index++) buffer[offset++] = text.charCodeAt(index);
    }
    this.length += count;
  }
}
