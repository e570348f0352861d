// The fast path of ENCODE JSON in a Kafka worker: one message's bytes straight to its row in
// storage's row encoding (storage/row-codec.ts), the form decoded-batch.ts transfers, without
// JSON.parse's object, without a Row array and without a string for any field the source does not
// declare or for a text field (its UTF-8 bytes are copied as they are).
//
// The contract is "the general path's bytes or nothing": `pack` either appends exactly what
// `encodeRow(writer, row)` appends for the row `MessageDecoder` makes of the message (FORMAT PLAIN,
// or UPSERT with a value), or appends nothing and returns false, and the worker hands that message
// to MessageDecoder (batch-packer.ts). So every error, every bad-message record and every unusual
// message (a key with an escape, a declared field twice, invalid UTF-8 in a declared string, a
// number JSON.parse would round, a value a converter refuses, nesting deeper than 64) keeps the
// general path's behaviour byte for byte; only well-formed messages whose values this file can
// convert exactly are packed here.
//
// The scanner validates the whole message as JSON.parse would (fields the source does not declare
// included: a message JSON.parse refuses is declined, and the general path rejects it). Per declared
// column, by its type:
//   int2/int4/int8  a plain integer literal within the type's range (int8: within 2^53, as the
//                   general path requires) is written directly
//   float4/float8   any number: Number() of its text equals JSON.parse's value
//   text/varchar/bpchar/name  a string without escapes: its bytes (valid UTF-8 checked)
//   bool            true/false
//   timestamp       a string `YYYY-MM-DD HH:MM:SS[.ffffff][zone]` (or `T`) in range, as
//                   sql/datetime.ts's fastTimestamp reads it (the zone ignored)
//   timestamptz     the same with a zone (`Z`, `+HH`, `+HHMM`, `+HH:MM`), subtracted; without a
//                   zone the session's applies, so the general path converts it
//   anything else   the JSON value as JSON.parse would give it (a string, a number, a boolean, or
//                   JSON.parse of the nested value's bytes) through the column's own converter
//                   (field-converters.ts), then encodeRowValue: the general path's code on the
//                   same input.

import type { Value } from '../../../sql/value.js';
import { daysFromCivil, daysInMonth, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND } from '../../../sql/calendar.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { encodeNumberValue, encodeRowValue, ROW_PUT, writeVarint } from '../../../storage/row-codec.js';
import { jsonFieldConverter, type FieldConverter } from '../field-converters.js';
import type { SourceLayout } from '../source-layout.js';

/** The row codec's tag bytes this file writes itself, read off the codec so they cannot drift. */
function tagOf(value: Value): number {
  const writer = new ByteWriter(16);
  encodeRowValue(writer, value);
  return writer.buffer[0]!;
}
const TAG_NULL = tagOf(null);
const TAG_FALSE = tagOf(false);
const TAG_TRUE = tagOf(true);
const TAG_INT64 = tagOf(1n);
const TAG_STRING = tagOf('');

const MICROS_PER_MILLI = 1000;
/** Deeper nesting in a field is left to the general path (JSON.parse has no such limit). */
const MAX_DEPTH = 64;

// Column classes: how a declared column's JSON value is converted here.
const K_INT = 1;
const K_INT8 = 2;
const K_FLOAT = 3;
const K_TEXT = 4;
const K_BOOL = 5;
const K_TIMESTAMP = 6;
const K_OTHER = 7;
const K_TIMESTAMPTZ = 8;

// What a declared column holds once its field is read.
const S_NULL = 1;
const S_RAW_TEXT = 2;
const S_NUMBER = 3;
const S_INT64 = 4;
const S_TRUE = 5;
const S_FALSE = 6;
const S_VALUE = 7;

// Where each position of the row comes from.
const P_PAYLOAD = 0;
const P_PARTITION = 1;
const P_OFFSET = 2;
const P_TIMESTAMP = 3;
const P_KEY = 4;
const P_ROW_ID = 5;
const P_NULL = 6;

function classOf(typeName: string): number {
  switch (typeName) {
    case 'int2':
    case 'int4':
      return K_INT;
    case 'int8':
      return K_INT8;
    case 'float4':
    case 'float8':
      return K_FLOAT;
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
      return K_TEXT;
    case 'bool':
      return K_BOOL;
    case 'timestamp':
      return K_TIMESTAMP;
    case 'timestamptz':
      return K_TIMESTAMPTZ;
    default:
      return K_OTHER;
  }
}

/** Per byte: 0 for a byte a string holds as it is (printable ASCII but `"` and `\`), else 1. */
const SPECIAL_IN_STRING = new Uint8Array(256);
for (let byte = 0; byte < 256; byte++) SPECIAL_IN_STRING[byte] = byte < 0x20 || byte === 0x22 || byte === 0x5c || byte >= 0x80 ? 1 : 0;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function isHex(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x66);
}

/** True when bytes [start, end) are well-formed UTF-8 (what Buffer#toString decodes without a replacement character). */
export function isWellFormedUtf8(b: Uint8Array, start: number, end: number): boolean {
  let i = start;
  while (i < end) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      if (i + 1 >= end || (b[i + 1]! & 0xc0) !== 0x80) return false;
      i += 2;
      continue;
    }
    if (c >= 0xe0 && c <= 0xef) {
      if (i + 2 >= end) return false;
      const c1 = b[i + 1]!;
      if ((c1 & 0xc0) !== 0x80 || (b[i + 2]! & 0xc0) !== 0x80) return false;
      if (c === 0xe0 && c1 < 0xa0) return false; // overlong
      if (c === 0xed && c1 >= 0xa0) return false; // a surrogate
      i += 3;
      continue;
    }
    if (c >= 0xf0 && c <= 0xf4) {
      if (i + 3 >= end) return false;
      const c1 = b[i + 1]!;
      if ((c1 & 0xc0) !== 0x80 || (b[i + 2]! & 0xc0) !== 0x80 || (b[i + 3]! & 0xc0) !== 0x80) return false;
      if (c === 0xf0 && c1 < 0x90) return false; // overlong
      if (c === 0xf4 && c1 >= 0x90) return false; // beyond U+10FFFF
      i += 4;
      continue;
    }
    return false;
  }
  return true;
}

/** The value of the two decimal digits at `at`, or -1. */
function twoDigits(b: Uint8Array, at: number): number {
  const d0 = b[at]! - 0x30;
  const d1 = b[at + 1]! - 0x30;
  if (d0 < 0 || d0 > 9 || d1 < 0 || d1 > 9) return -1;
  return d0 * 10 + d1;
}

/**
 * Microseconds of a timestamp written `YYYY-MM-DD HH:MM:SS[.f{1,6}][zone]` (or with `T`; zone `Z`,
 * `+HH`, `+HHMM` or `+HH:MM`) in bytes [start, end), as sql/datetime.ts's fastTimestamp reads it:
 * `timestamp` ignores a zone, `timestamptz` subtracts it and needs one (without one the session's
 * zone applies: the general path's). NaN when the text is any other shape or out of fastTimestamp's
 * ranges (the caller then parses the text the general way).
 */
export function timestampMicros(b: Uint8Array, start: number, end: number, withZone = false): number {
  const length = end - start;
  if (length < 19) return NaN;
  if (b[start + 4] !== 0x2d || b[start + 7] !== 0x2d || b[start + 13] !== 0x3a || b[start + 16] !== 0x3a) return NaN;
  const separator = b[start + 10];
  if (separator !== 0x20 && separator !== 0x54) return NaN;
  const y0 = twoDigits(b, start);
  const y1 = twoDigits(b, start + 2);
  const month = twoDigits(b, start + 5);
  const day = twoDigits(b, start + 8);
  const hour = twoDigits(b, start + 11);
  const minute = twoDigits(b, start + 14);
  const second = twoDigits(b, start + 17);
  if (y0 < 0 || y1 < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return NaN;
  const year = y0 * 100 + y1;
  if (year === 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return NaN;
  if (hour > 23 || minute > 59 || second > 59) return NaN;
  let i = start + 19;
  let fraction = 0;
  if (i < end && b[i] === 0x2e) {
    i++;
    let scale = 100_000;
    const from = i;
    while (i < end && i - from < 6) {
      const digit = b[i]! - 0x30;
      if (digit < 0 || digit > 9) break;
      fraction += digit * scale;
      scale /= 10;
      i++;
    }
    if (i === from) return NaN;
  }
  const local = daysFromCivil(year, month, day) * MICROS_PER_DAY + hour * MICROS_PER_HOUR + minute * MICROS_PER_MINUTE + second * MICROS_PER_SECOND + fraction;
  if (i === end) return withZone ? NaN : local;
  let offsetSeconds = 0;
  const sign = b[i];
  if (sign === 0x5a) {
    i++;
  } else if (sign === 0x2b || sign === 0x2d) {
    const hours = twoDigits(b, i + 1);
    if (i + 3 > end || hours < 0) return NaN;
    i += 3;
    let minutes = 0;
    if (i < end) {
      if (b[i] === 0x3a) i++;
      minutes = i + 2 <= end ? twoDigits(b, i) : -1;
      if (minutes < 0) return NaN;
      i += 2;
    }
    offsetSeconds = (sign === 0x2d ? -1 : 1) * (hours * 3600 + minutes * 60);
  } else {
    return NaN;
  }
  if (i !== end) return NaN;
  return withZone ? local - offsetSeconds * MICROS_PER_SECOND : local;
}

export class JsonRowPacker {
  private readonly width: number;
  /** Per declared column (layout.payload order). */
  private readonly names: Uint8Array[];
  private readonly classes: Int32Array;
  private readonly required: boolean[];
  private readonly converters: FieldConverter[];
  private readonly low: Float64Array;
  private readonly high: Float64Array;
  private readonly float4: boolean[];
  /** Per declared column, for the message being packed. */
  private readonly seen: Int32Array;
  private readonly states: Int32Array;
  private readonly starts: Int32Array;
  private readonly ends: Int32Array;
  private readonly numbers: Float64Array;
  private readonly values: Value[];
  /**
   * The message's number in `seen` (a column was read in this message when its entry equals it);
   * it stays within int32, the entries' type: at its end the entries are cleared and it starts over.
   */
  generation = 0;
  /** The declared column expected next (the one after the last field read). */
  private next = 0;
  /** Per row position: its source (P_*) and, for P_PAYLOAD, the declared column. */
  private readonly sources: Int32Array;
  private readonly columns: Int32Array;
  /** Declared columns by the first byte of their name (for the field lookup). */
  private readonly byFirstByte: Int32Array[];
  private readonly hasRowId: boolean;
  /** Messages packed here and messages declined (for tests and traces). */
  packed = 0;
  declined = 0;

  constructor(
    layout: SourceLayout,
    /** The hidden row id of the message's row (as MessageDecoder's). */
    private readonly nextRowId: (partition: number, offset: bigint) => bigint,
  ) {
    const payload = layout.payload;
    const count = payload.length;
    this.width = layout.width;
    this.names = payload.map((column) => new Uint8Array(Buffer.from(column.name, 'utf8')));
    this.classes = Int32Array.from(payload, (column) => classOf(column.type.name));
    this.required = payload.map((column) => column.required);
    this.converters = payload.map((column) => jsonFieldConverter(column.type));
    this.low = Float64Array.from(payload, (column) => (column.type.name === 'int2' ? -32768 : -2147483648));
    this.high = Float64Array.from(payload, (column) => (column.type.name === 'int2' ? 32767 : 2147483647));
    this.float4 = payload.map((column) => column.type.name === 'float4');
    this.seen = new Int32Array(count);
    this.states = new Int32Array(count);
    this.starts = new Int32Array(count);
    this.ends = new Int32Array(count);
    this.numbers = new Float64Array(count);
    this.values = new Array<Value>(count).fill(null);
    this.sources = new Int32Array(layout.width).fill(P_NULL);
    this.columns = new Int32Array(layout.width).fill(-1);
    payload.forEach((column, c) => {
      this.sources[column.position] = P_PAYLOAD;
      this.columns[column.position] = c;
    });
    if (layout.partitionPosition !== undefined) this.sources[layout.partitionPosition] = P_PARTITION;
    if (layout.offsetPosition !== undefined) this.sources[layout.offsetPosition] = P_OFFSET;
    if (layout.timestampPosition !== undefined) this.sources[layout.timestampPosition] = P_TIMESTAMP;
    if (layout.keyPosition !== undefined) this.sources[layout.keyPosition] = P_KEY;
    if (layout.rowIdPosition !== undefined) this.sources[layout.rowIdPosition] = P_ROW_ID;
    this.hasRowId = layout.rowIdPosition !== undefined;
    const buckets: number[][] = Array.from({ length: 256 }, () => []);
    this.names.forEach((name, c) => buckets[name.length === 0 ? 0x22 : name[0]!]!.push(c));
    this.byFirstByte = buckets.map((bucket) => Int32Array.from(bucket));
  }

  /**
   * The fast path applies to sources whose every declared name a byte comparison finds exactly: a
   * name with U+FFFD could also be the decoding of invalid UTF-8 in a key, and one with a quote, a
   * backslash or a control character is escaped in a key, so such a source keeps the general path.
   */
  static applies(layout: SourceLayout): boolean {
    return layout.encode === 'json' && (layout.format === 'plain' || layout.format === 'upsert') && layout.payload.every((column) => !/[\u0000-\u001f"\\\uFFFD]/.test(column.name));
  }

  /**
   * Appends the row of the JSON object in `b` with its INCLUDE columns and row id, exactly as
   * `encodeRow` of MessageDecoder's row; false (nothing appended) when the general path must
   * decode this message.
   */
  pack(b: Buffer, partition: number, offset: bigint, timestampMillis: number, key: Buffer | null, writer: ByteWriter): boolean {
    if (!this.scan(b)) {
      this.declined++;
      return false;
    }
    let rowId: bigint | undefined;
    if (this.hasRowId) {
      try {
        rowId = this.nextRowId(partition, offset);
      } catch {
        // (kafkaRowId refuses a partition beyond 65,535): the general path rejects the message.
        this.declined++;
        return false;
      }
    }
    this.write(b, partition, offset, timestampMillis, key, rowId, writer);
    this.packed++;
    return true;
  }

  /** Reads the message's declared fields into states/starts/ends/numbers/values; false: decline. */
  private scan(b: Buffer): boolean {
    const n = b.length;
    if (this.generation >= 0x7fffffff) {
      this.seen.fill(0);
      this.generation = 0;
    }
    const generation = ++this.generation;
    this.next = 0;
    let i = 0;
    while (i < n && isWhitespace(b[i]!)) i++;
    if (b[i] !== 0x7b) return false;
    i++;
    while (i < n && isWhitespace(b[i]!)) i++;
    if (b[i] === 0x7d) {
      i++;
    } else {
      for (;;) {
        if (b[i] !== 0x22) return false;
        const keyStart = i + 1;
        // Producers write fields in one order: try the column after the last one read first.
        let column = this.expected(b, keyStart);
        let k = column < 0 ? keyStart : keyStart + this.names[column]!.length;
        if (column < 0) {
          for (;;) {
            if (k >= n) return false;
            const byte = b[k]!;
            if (byte === 0x22) break;
            // An escape could spell a declared name (or its duplicate): the general path decides.
            if (byte === 0x5c || byte < 0x20) return false;
            k++;
          }
          column = this.lookup(b, keyStart, k);
        }
        if (column >= 0) this.next = column + 1;
        i = k + 1;
        while (i < n && isWhitespace(b[i]!)) i++;
        if (b[i] !== 0x3a) return false;
        i++;
        while (i < n && isWhitespace(b[i]!)) i++;
        if (column < 0) {
          i = skipValue(b, i, 0);
        } else {
          // JSON.parse keeps the last of duplicate fields: the general path decides.
          if (this.seen[column] === generation) return false;
          this.seen[column] = generation;
          i = this.readField(column, b, i);
        }
        if (i < 0) return false;
        while (i < n && isWhitespace(b[i]!)) i++;
        const next = b[i];
        if (next === 0x2c) {
          i++;
          while (i < n && isWhitespace(b[i]!)) i++;
          continue;
        }
        if (next !== 0x7d) return false;
        i++;
        break;
      }
    }
    while (i < n && isWhitespace(b[i]!)) i++;
    if (i !== n) return false;
    const seen = this.seen;
    const states = this.states;
    const required = this.required;
    for (let c = 0; c < seen.length; c++) {
      if (seen[c] !== generation) {
        if (required[c]) return false;
        states[c] = S_NULL;
      }
    }
    return true;
  }

  /** `next` when the key at `start` is its name (the bytes then the closing quote), else -1. */
  private expected(b: Buffer, start: number): number {
    const c = this.next;
    if (c >= this.names.length) return -1;
    const name = this.names[c]!;
    const length = name.length;
    if (b[start + length] !== 0x22) return -1;
    for (let k = 0; k < length; k++) if (name[k] !== b[start + k]) return -1;
    return c;
  }

  /** The declared column named by bytes [start, end), or -1. */
  private lookup(b: Buffer, start: number, end: number): number {
    const length = end - start;
    const candidates = this.byFirstByte[length === 0 ? 0x22 : b[start]!]!;
    for (let j = 0; j < candidates.length; j++) {
      const c = candidates[j]!;
      const name = this.names[c]!;
      if (name.length !== length) continue;
      let k = 1;
      while (k < length && name[k] === b[start + k]) k++;
      if (k >= length) return c;
    }
    return -1;
  }

  /** Reads the value at `i` for declared column `c`; the index after it, or -1 (decline). */
  private readField(c: number, b: Buffer, i: number): number {
    const n = b.length;
    const first = b[i];
    const kind = this.classes[c]!;
    if (first === 0x22) {
      const start = i + 1;
      let k = start;
      let escaped = false;
      let ascii = true;
      for (;;) {
        while (k < n && SPECIAL_IN_STRING[b[k]!] === 0) k++;
        if (k >= n) return -1;
        const byte = b[k]!;
        if (byte === 0x22) break;
        if (byte === 0x5c) {
          escaped = true;
          k += 2;
          continue;
        }
        if (byte < 0x20) return -1;
        ascii = false;
        k++;
      }
      if (k >= n) return -1;
      // Invalid UTF-8 becomes U+FFFD in the general path: it decides such a string.
      if (!ascii && !isWellFormedUtf8(b, start, k)) return -1;
      const end = k + 1;
      if (!escaped) {
        if (kind === K_TEXT) {
          this.states[c] = S_RAW_TEXT;
          this.starts[c] = start;
          this.ends[c] = k;
          return end;
        }
        if (kind === K_TIMESTAMP || kind === K_TIMESTAMPTZ) {
          const micros = timestampMicros(b, start, k, kind === K_TIMESTAMPTZ);
          if (micros === micros) {
            this.states[c] = S_NUMBER;
            this.numbers[c] = micros;
            return end;
          }
        }
        return this.convert(c, b.toString('utf8', start, k)) ? end : -1;
      }
      let text: unknown;
      try {
        text = JSON.parse(b.toString('utf8', i, end));
      } catch {
        return -1;
      }
      return this.convert(c, text) ? end : -1;
    }
    if (first === 0x2d || (first !== undefined && first >= 0x30 && first <= 0x39)) return this.readNumber(c, kind, b, i);
    if (first === 0x74) {
      if (b[i + 1] !== 0x72 || b[i + 2] !== 0x75 || b[i + 3] !== 0x65) return -1;
      if (kind === K_BOOL) this.states[c] = S_TRUE;
      else if (!this.convert(c, true)) return -1;
      return i + 4;
    }
    if (first === 0x66) {
      if (b[i + 1] !== 0x61 || b[i + 2] !== 0x6c || b[i + 3] !== 0x73 || b[i + 4] !== 0x65) return -1;
      if (kind === K_BOOL) this.states[c] = S_FALSE;
      else if (!this.convert(c, false)) return -1;
      return i + 5;
    }
    if (first === 0x6e) {
      if (b[i + 1] !== 0x75 || b[i + 2] !== 0x6c || b[i + 3] !== 0x6c) return -1;
      if (this.required[c]) return -1;
      this.states[c] = S_NULL;
      return i + 4;
    }
    if (first === 0x7b || first === 0x5b) {
      const end = skipValue(b, i, 0);
      if (end < 0) return -1;
      let nested: unknown;
      try {
        nested = JSON.parse(b.toString('utf8', i, end));
      } catch {
        return -1;
      }
      return this.convert(c, nested) ? end : -1;
    }
    return -1;
  }

  /** A JSON number at `i` (grammar checked) for declared column `c`. */
  private readNumber(c: number, kind: number, b: Buffer, i: number): number {
    const n = b.length;
    const start = i;
    const negative = b[i] === 0x2d;
    if (negative) i++;
    const digitsStart = i;
    let value = 0;
    if (b[i] === 0x30) {
      i++;
    } else {
      while (i < n) {
        const digit = b[i]! - 0x30;
        if (digit < 0 || digit > 9) break;
        value = value * 10 + digit;
        i++;
      }
    }
    const digits = i - digitsStart;
    if (digits === 0) return -1;
    let integer = true;
    if (b[i] === 0x2e) {
      integer = false;
      i++;
      const from = i;
      while (i < n && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
      if (i === from) return -1;
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      integer = false;
      i++;
      if (b[i] === 0x2b || b[i] === 0x2d) i++;
      const from = i;
      while (i < n && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
      if (i === from) return -1;
    }
    // A literal of at most 15 digits is exact as computed; -0 and the rest go through Number().
    const plain = integer && digits <= 15 && !(negative && value === 0);
    if (plain) {
      const signed = negative ? -value : value;
      if (kind === K_INT) {
        if (signed < this.low[c]! || signed > this.high[c]!) return -1;
        this.states[c] = S_NUMBER;
        this.numbers[c] = signed;
        return i;
      }
      if (kind === K_INT8) {
        this.states[c] = S_INT64;
        this.numbers[c] = signed;
        return i;
      }
      if (kind === K_FLOAT) {
        this.states[c] = S_NUMBER;
        this.numbers[c] = this.float4[c] ? Math.fround(signed) : signed;
        return i;
      }
    }
    const number = plain ? (negative ? -value : value) : Number(b.toString('latin1', start, i));
    if (kind === K_FLOAT) {
      this.states[c] = S_NUMBER;
      this.numbers[c] = this.float4[c] ? Math.fround(number) : number;
      return i;
    }
    return this.convert(c, number) ? i : -1;
  }

  /** The column's own converter on the value JSON.parse would have given; false if it throws. */
  private convert(c: number, field: unknown): boolean {
    let value: Value;
    try {
      value = this.converters[c]!(field);
    } catch {
      return false;
    }
    this.states[c] = S_VALUE;
    this.values[c] = value;
    return true;
  }

  /** The row: ROW_PUT, its width, then each position's value as encodeRowValue writes it. */
  private write(b: Buffer, partition: number, offset: bigint, timestampMillis: number, key: Buffer | null, rowId: bigint | undefined, writer: ByteWriter): void {
    writer.byte(ROW_PUT);
    writeVarint(writer, this.width);
    const sources = this.sources;
    for (let p = 0; p < sources.length; p++) {
      switch (sources[p]) {
        case P_PAYLOAD:
          this.writeColumn(this.columns[p]!, b, writer);
          break;
        case P_PARTITION:
          encodeRowValue(writer, partition);
          break;
        case P_OFFSET:
          encodeRowValue(writer, offset);
          break;
        case P_TIMESTAMP:
          encodeRowValue(writer, timestampMillis * MICROS_PER_MILLI);
          break;
        case P_KEY:
          encodeRowValue(writer, key);
          break;
        case P_ROW_ID:
          encodeRowValue(writer, rowId!);
          break;
        default:
          writer.byte(TAG_NULL);
      }
    }
  }

  private writeColumn(c: number, b: Buffer, writer: ByteWriter): void {
    switch (this.states[c]) {
      case S_RAW_TEXT: {
        const start = this.starts[c]!;
        const end = this.ends[c]!;
        writer.byte(TAG_STRING);
        writeVarint(writer, end - start);
        copyBytes(writer, b, start, end);
        return;
      }
      case S_NUMBER:
        encodeNumberValue(writer, this.numbers[c]!);
        return;
      case S_INT64:
        writer.byte(TAG_INT64);
        writer.safeInt64LittleEndian(this.numbers[c]!);
        return;
      case S_TRUE:
        writer.byte(TAG_TRUE);
        return;
      case S_FALSE:
        writer.byte(TAG_FALSE);
        return;
      case S_VALUE: {
        const value = this.values[c]!;
        this.values[c] = null;
        encodeRowValue(writer, value);
        return;
      }
      default:
        writer.byte(TAG_NULL);
    }
  }
}

/**
 * Bytes [start, end) of `b` appended to `writer`: a loop for short strings, TypedArray#set beyond
 * (its subarray object and native call cost about what a loop over ~40 bytes does).
 */
function copyBytes(writer: ByteWriter, b: Buffer, start: number, end: number): void {
  const count = end - start;
  writer.ensure(count);
  if (count > 40) {
    writer.buffer.set(b.subarray(start, end), writer.length);
    writer.length += count;
    return;
  }
  const buffer = writer.buffer;
  let at = writer.length;
  for (let k = start; k < end; k++) buffer[at++] = b[k]!;
  writer.length = at;
}

/**
 * The index after the JSON value at `i` (leading whitespace skipped), checked as JSON.parse
 * checks it; -1 if it is not valid JSON or nests deeper than MAX_DEPTH.
 */
function skipValue(b: Uint8Array, i: number, depth: number): number {
  const n = b.length;
  while (i < n && isWhitespace(b[i]!)) i++;
  const first = b[i];
  if (first === 0x22) return skipString(b, i);
  if (first === 0x2d || (first !== undefined && first >= 0x30 && first <= 0x39)) return skipNumber(b, i);
  if (first === 0x74) return b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65 ? i + 4 : -1;
  if (first === 0x66) return b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65 ? i + 5 : -1;
  if (first === 0x6e) return b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c ? i + 4 : -1;
  if (depth >= MAX_DEPTH) return -1;
  if (first === 0x5b) {
    i++;
    while (i < n && isWhitespace(b[i]!)) i++;
    if (b[i] === 0x5d) return i + 1;
    for (;;) {
      i = skipValue(b, i, depth + 1);
      if (i < 0) return -1;
      while (i < n && isWhitespace(b[i]!)) i++;
      if (b[i] === 0x2c) {
        i++;
        continue;
      }
      return b[i] === 0x5d ? i + 1 : -1;
    }
  }
  if (first === 0x7b) {
    i++;
    while (i < n && isWhitespace(b[i]!)) i++;
    if (b[i] === 0x7d) return i + 1;
    for (;;) {
      while (i < n && isWhitespace(b[i]!)) i++;
      if (b[i] !== 0x22) return -1;
      i = skipString(b, i);
      if (i < 0) return -1;
      while (i < n && isWhitespace(b[i]!)) i++;
      if (b[i] !== 0x3a) return -1;
      i = skipValue(b, i + 1, depth + 1);
      if (i < 0) return -1;
      while (i < n && isWhitespace(b[i]!)) i++;
      if (b[i] === 0x2c) {
        i++;
        continue;
      }
      return b[i] === 0x7d ? i + 1 : -1;
    }
  }
  return -1;
}

/** The index after the string at `i` (its opening quote), escapes and control characters checked. */
function skipString(b: Uint8Array, i: number): number {
  const n = b.length;
  i++;
  for (;;) {
    if (i >= n) return -1;
    const byte = b[i]!;
    if (byte === 0x22) return i + 1;
    if (byte < 0x20) return -1;
    if (byte === 0x5c) {
      const escape = b[i + 1];
      if (escape === 0x75) {
        if (!isHex(b[i + 2] ?? 0) || !isHex(b[i + 3] ?? 0) || !isHex(b[i + 4] ?? 0) || !isHex(b[i + 5] ?? 0)) return -1;
        i += 6;
        continue;
      }
      if (escape === 0x22 || escape === 0x5c || escape === 0x2f || escape === 0x62 || escape === 0x66 || escape === 0x6e || escape === 0x72 || escape === 0x74) {
        i += 2;
        continue;
      }
      return -1;
    }
    i++;
  }
}

/** The index after the number at `i`, its grammar checked (no leading zeros, digits after `.` and `e`). */
function skipNumber(b: Uint8Array, i: number): number {
  const n = b.length;
  if (b[i] === 0x2d) i++;
  if (b[i] === 0x30) {
    i++;
  } else {
    const from = i;
    while (i < n && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    if (i === from) return -1;
  }
  if (b[i] === 0x2e) {
    i++;
    const from = i;
    while (i < n && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    if (i === from) return -1;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    if (b[i] === 0x2b || b[i] === 0x2d) i++;
    const from = i;
    while (i < n && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    if (i === from) return -1;
  }
  return i;
}
