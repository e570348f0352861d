// The compact binary encoding of a stored row (the value half of an MVCC entry). Self-describing:
// one tag byte per value, then a fixed-size or length-prefixed payload, so a row decodes without
// its schema and a schema change never misreads old versions. The first byte of an entry marks a
// put (ROW_PUT) or a tombstone (ROW_TOMBSTONE); the native iterator relies on 0 meaning tombstone.

import { Numeric } from '../sql/numeric.js';
import { formatJson, Jsonb, parseJsonb } from '../sql/json.js';
import type { Interval, Row, SqlArray, Value } from '../sql/value.js';
import { ByteWriter } from './byte-writer.js';

export const ROW_TOMBSTONE = 0;
export const ROW_PUT = 1;

const TAG_NULL = 0;
const TAG_FALSE = 1;
const TAG_TRUE = 2;
const TAG_INT32 = 3;
const TAG_FLOAT64 = 4;
const TAG_INT64 = 5;
const TAG_BIGINT_TEXT = 6;
const TAG_STRING = 7;
const TAG_BYTES = 8;
const TAG_NUMERIC = 9;
const TAG_INTERVAL = 10;
const TAG_JSONB = 11;
const TAG_ARRAY = 12;
/** A finite numeric whose unscaled value fits in 64 bits and whose scale fits in a signed byte. */
const TAG_NUMERIC_INT64 = 13;

const NUMERIC_SPECIAL_CODES = { nan: 1, inf: 2, '-inf': 3 } as const;
const NUMERIC_SPECIALS = [undefined, 'nan', 'inf', '-inf'] as const;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** The row codec's varint (7 bits a byte, low first). */
export function writeVarint(writer: ByteWriter, value: number): void {
  while (value >= 0x80) {
    writer.byte((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  writer.byte(value);
}

/** Appends ROW_PUT and the row. */
export function encodeRow(writer: ByteWriter, row: Row): void {
  writer.byte(ROW_PUT);
  writeVarint(writer, row.length);
  for (let index = 0; index < row.length; index++) encodeRowValue(writer, row[index]!);
}

/** A JS number as a row value: int32 when it is one (not -0), else float64. */
export function encodeNumberValue(writer: ByteWriter, value: number): void {
  if ((value | 0) === value && !Object.is(value, -0)) {
    writer.byte(TAG_INT32);
    writer.int32LittleEndian(value);
  } else {
    writer.byte(TAG_FLOAT64);
    writer.float64LittleEndian(value);
  }
}

export function encodeRowValue(writer: ByteWriter, value: Value): void {
  if (value === null) return writer.byte(TAG_NULL);
  switch (typeof value) {
    case 'boolean':
      return writer.byte(value ? TAG_TRUE : TAG_FALSE);
    case 'number':
      return encodeNumberValue(writer, value);
    case 'bigint': {
      // A safe integer's Number is exact (and an unsafe one's is not within the bounds): its eight
      // bytes without a bigint comparison.
      const number = Number(value);
      if (number >= -Number.MAX_SAFE_INTEGER && number <= Number.MAX_SAFE_INTEGER) {
        writer.byte(TAG_INT64);
        writer.safeInt64LittleEndian(number);
      } else if (value >= INT64_MIN && value <= INT64_MAX) {
        writer.byte(TAG_INT64);
        writer.int64LittleEndian(value);
      } else {
        writer.byte(TAG_BIGINT_TEXT);
        writeText(writer, value.toString());
      }
      return;
    }
    case 'string':
      writer.byte(TAG_STRING);
      writeText(writer, value);
      return;
    default:
      break;
  }
  if (value instanceof Uint8Array) {
    writer.byte(TAG_BYTES);
    writeVarint(writer, value.length);
    writer.bytes(value);
  } else if (value instanceof Numeric) {
    // Most numerics (prices, amounts) fit the fixed ten bytes: no decimal text to build or parse.
    if (value.special === undefined && value.scale >= -128 && value.scale <= 127) {
      const unscaled = Number(value.unscaled);
      if (unscaled >= -Number.MAX_SAFE_INTEGER && unscaled <= Number.MAX_SAFE_INTEGER) {
        writer.byte(TAG_NUMERIC_INT64);
        writer.byte(value.scale & 0xff);
        writer.safeInt64LittleEndian(unscaled);
        return;
      }
      if (value.unscaled >= INT64_MIN && value.unscaled <= INT64_MAX) {
        writer.byte(TAG_NUMERIC_INT64);
        writer.byte(value.scale & 0xff);
        writer.int64LittleEndian(value.unscaled);
        return;
      }
    }
    writer.byte(TAG_NUMERIC);
    writer.byte(value.special === undefined ? 0 : NUMERIC_SPECIAL_CODES[value.special]);
    writer.int32LittleEndian(value.scale);
    writeText(writer, value.unscaled.toString());
  } else if (value instanceof Jsonb) {
    writer.byte(TAG_JSONB);
    // PostgreSQL's jsonb text: exact for numerics (1.50 stays 1.50), parsed back by parseJsonb.
    writeText(writer, formatJson(value.value));
  } else if ((value as SqlArray).kind === 'array') {
    const array = value as SqlArray;
    writer.byte(TAG_ARRAY);
    writeVarint(writer, array.elements.length);
    for (const element of array.elements) encodeRowValue(writer, element);
    const dims = array.dims ?? [];
    writeVarint(writer, dims.length);
    for (const dimension of dims) writeVarint(writer, dimension);
  } else {
    const interval = value as Interval;
    writer.byte(TAG_INTERVAL);
    writer.int32LittleEndian(interval.months);
    writer.int32LittleEndian(interval.days);
    writer.float64LittleEndian(interval.micros);
  }
}

function writeText(writer: ByteWriter, text: string): void {
  // Length prefix after the fact: reserve the worst case for short strings, else measure.
  if (text.length < 42) {
    const lengthAt = writer.length;
    writer.byte(0);
    const byteCount = writer.utf8(text);
    if (byteCount < 0x80) {
      writer.buffer[lengthAt] = byteCount;
      return;
    }
    writer.length = lengthAt;
  }
  writeVarint(writer, Buffer.byteLength(text, 'utf8'));
  writer.utf8(text);
}

/** A cursor over encoded bytes; `offset` advances as values are read. */
export class RowReader {
  buffer: Buffer;
  offset: number;
  constructor(buffer: Buffer, offset = 0) {
    this.buffer = buffer;
    this.offset = offset;
  }

  varint(): number {
    let result = 0;
    let multiplier = 1;
    for (;;) {
      const byte = this.buffer[this.offset++]!;
      result += (byte & 0x7f) * multiplier;
      if (byte < 0x80) return result;
      multiplier *= 128;
    }
  }

  text(): string {
    const length = this.varint();
    const start = this.offset;
    this.offset += length;
    return this.buffer.toString('utf8', start, start + length);
  }
}

/** Decodes a value written by encodeRow (starting at its ROW_PUT byte); undefined for a tombstone. */
export function decodeRow(buffer: Buffer, offset = 0): Row | undefined {
  if (buffer[offset] === ROW_TOMBSTONE) return undefined;
  const reader = new RowReader(buffer, offset + 1);
  const count = reader.varint();
  const row: Row = new Array<Value>(count);
  for (let index = 0; index < count; index++) row[index] = decodeRowValue(reader);
  return row;
}

export function decodeRowValue(reader: RowReader): Value {
  const buffer = reader.buffer;
  const tag = buffer[reader.offset++];
  switch (tag) {
    case TAG_NULL:
      return null;
    case TAG_FALSE:
      return false;
    case TAG_TRUE:
      return true;
    case TAG_INT32: {
      const value = buffer.readInt32LE(reader.offset);
      reader.offset += 4;
      return value;
    }
    case TAG_FLOAT64: {
      const value = buffer.readDoubleLE(reader.offset);
      reader.offset += 8;
      return value;
    }
    case TAG_INT64: {
      const value = buffer.readBigInt64LE(reader.offset);
      reader.offset += 8;
      return value;
    }
    case TAG_BIGINT_TEXT:
      return BigInt(reader.text());
    case TAG_STRING:
      return reader.text();
    case TAG_BYTES: {
      const length = reader.varint();
      const bytes = new Uint8Array(length);
      bytes.set(buffer.subarray(reader.offset, reader.offset + length));
      reader.offset += length;
      return bytes;
    }
    case TAG_NUMERIC: {
      const special = NUMERIC_SPECIALS[buffer[reader.offset++]!];
      const scale = buffer.readInt32LE(reader.offset);
      reader.offset += 4;
      return new Numeric(BigInt(reader.text()), scale, special);
    }
    case TAG_NUMERIC_INT64: {
      const scale = buffer.readInt8(reader.offset);
      const unscaled = buffer.readBigInt64LE(reader.offset + 1);
      reader.offset += 9;
      return new Numeric(unscaled, scale);
    }
    case TAG_INTERVAL: {
      const months = buffer.readInt32LE(reader.offset);
      const days = buffer.readInt32LE(reader.offset + 4);
      const micros = buffer.readDoubleLE(reader.offset + 8);
      reader.offset += 16;
      return { months, days, micros };
    }
    case TAG_JSONB:
      return parseJsonb(reader.text());
    case TAG_ARRAY: {
      const count = reader.varint();
      const elements: Value[] = new Array<Value>(count);
      for (let index = 0; index < count; index++) elements[index] = decodeRowValue(reader);
      const dimensionCount = reader.varint();
      if (dimensionCount === 0) return { kind: 'array', elements };
      const dims: number[] = [];
      for (let index = 0; index < dimensionCount; index++) dims.push(reader.varint());
      return { kind: 'array', elements, dims };
    }
    default:
      throw new Error(`oxbow internal assertion: unknown row value tag ${String(tag)} at ${reader.offset - 1}`);
  }
}
