// Raw messages to changes of the connector relation, per FORMAT and ENCODE:
//   PLAIN     every message is a new row (append-only; a table with a primary key upserts)
//   UPSERT    the value is the row, upserted by primary key; a null value (tombstone) deletes the
//             row whose key the message key names (a JSON object of the key columns, or the bare
//             key text when the key has one column)
//   DEBEZIUM  {before, after, op} (optionally inside {payload}): c/r insert after, u replaces
//             before by after, d deletes before
// ENCODE JSON (an object per message, fields by column name; missing fields are NULL unless the
// column is NOT NULL or in the key) or CSV (one line per message, fields by position); ENCODE AVRO
// and PROTOBUF through the source's PayloadDecoder (payload-decoder.ts), records by field name.
//
// A message that cannot be decoded (invalid JSON, wrong types, missing key fields, oversized) is
// reported through `reject` with its partition and offset and skipped; it never stops the source.
// Output goes into a DecodedChanges in message order: `kinds` +1 upserts/inserts a full row, -1
// deletes by the key columns of the row.

import type { Row } from '../../sql/value.js';
import type { RawMessageBatch } from './source.js';
import type { SourceLayout } from './source-layout.js';
import { jsonFieldConverter, textFieldConverter, type FieldConverter } from './field-converters.js';
import { payloadDecoder, type PayloadDecoder } from './payload-decoder.js';

export interface DecodedChanges {
  rows: Row[];
  kinds: number[];
}

export type RejectMessage = (partition: number, offset: bigint, error: string, payload: Buffer | null) => void;

const MICROS_PER_MILLI = 1000;

export class MessageDecoder {
  private readonly jsonConverters: FieldConverter[];
  private readonly textConverters: ((text: string | null) => unknown)[];
  private readonly names: string[];
  private readonly positions: number[];
  private readonly required: boolean[];
  /** Names every object has (`constructor`, `__proto__`): read as own fields only. */
  private readonly inherited: boolean[];
  /** ENCODE AVRO / PROTOBUF: the schema's decoder (undefined for JSON and CSV). */
  readonly schemaDecoder: PayloadDecoder | undefined;

  constructor(
    private readonly layout: SourceLayout,
    private readonly maxMessageBytes: number,
    /** The hidden row id of the message's row (a replayed Kafka source derives it from partition and offset). */
    private readonly nextRowId: (partition: number, offset: bigint) => bigint,
  ) {
    this.jsonConverters = layout.payload.map((column) => jsonFieldConverter(column.type));
    this.textConverters = layout.payload.map((column) => textFieldConverter(column.type));
    this.names = layout.payload.map((column) => column.name);
    this.positions = layout.payload.map((column) => column.position);
    this.required = layout.payload.map((column) => column.required);
    this.inherited = layout.payload.map((column) => column.name in Object.prototype);
    this.schemaDecoder = payloadDecoder(layout);
  }

  /** Decodes `batch` into `out`; bad messages go to `reject`. */
  decode(batch: RawMessageBatch, out: DecodedChanges, reject: RejectMessage): void {
    for (let i = 0; i < batch.offsets.length; i++) this.decodeMessage(batch, i, out, reject);
  }

  /** Decodes message `i` of `batch` into `out` (none, one or two changes); a bad message goes to `reject`. */
  decodeMessage(batch: RawMessageBatch, i: number, out: DecodedChanges, reject: RejectMessage): void {
    const partition = batch.partition;
    const format = this.layout.format;
    const value = batch.values[i]!;
    const key = batch.keys[i]!;
    const offset = batch.offsets[i]!;
    const size = (value?.length ?? 0) + (key?.length ?? 0);
    if (size > this.maxMessageBytes) {
      reject(partition, offset, `message of ${size} bytes exceeds max.message.bytes (${this.maxMessageBytes})`, value);
      return;
    }
    try {
      if (format === 'plain') {
        if (value === null) throw new Error('message without a value');
        out.rows.push(this.withMetadata(this.rowFromPayload(value), partition, offset, batch.timestamps[i]!, key));
        out.kinds.push(1);
      } else if (format === 'upsert') {
        if (value === null) {
          out.rows.push(this.keyRow(key));
          out.kinds.push(-1);
        } else {
          out.rows.push(this.withMetadata(this.rowFromPayload(value), partition, offset, batch.timestamps[i]!, key));
          out.kinds.push(1);
        }
      } else {
        if (value === null) return; // Debezium follows a delete with a tombstone for compaction.
        this.debezium(value, partition, offset, batch.timestamps[i]!, key, out);
      }
    } catch (error) {
      reject(partition, offset, error instanceof Error ? error.message : String(error), value);
    }
  }

  private debezium(value: Buffer, partition: number, offset: bigint, timestamp: number, key: Buffer | null, out: DecodedChanges): void {
    let envelope = this.schemaDecoder === undefined ? parseObject(value) : this.schemaDecoder.decodeValue(value);
    if (envelope['payload'] !== undefined && envelope['op'] === undefined) {
      const payload = envelope['payload'];
      if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw new Error('Debezium "payload" is not an object');
      envelope = payload as Record<string, unknown>;
    }
    const op = envelope['op'];
    const image = (name: 'before' | 'after'): Row => {
      const fields = envelope[name];
      if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) throw new Error(`Debezium op "${String(op)}" without "${name}"`);
      return this.withMetadata(this.schemaDecoder === undefined ? this.rowFromObject(fields as Record<string, unknown>) : this.rowFromRecord(fields), partition, offset, timestamp, key);
    };
    switch (op) {
      case 'c':
      case 'r':
        out.rows.push(image('after'));
        out.kinds.push(1);
        return;
      case 'u': {
        const after = image('after');
        const beforeFields = envelope['before'];
        // The before image may be absent (REPLICA IDENTITY DEFAULT): the upsert by key suffices.
        if (beforeFields !== null && typeof beforeFields === 'object') {
          const before = image('before');
          if (!this.sameKey(before, after)) {
            out.rows.push(before);
            out.kinds.push(-1);
          }
        }
        out.rows.push(after);
        out.kinds.push(1);
        return;
      }
      case 'd':
        out.rows.push(image('before'));
        out.kinds.push(-1);
        return;
      default:
        throw new Error(`unknown Debezium op ${JSON.stringify(op)}`);
    }
  }

  private sameKey(a: Row, b: Row): boolean {
    for (const index of this.layout.primaryKey) if (a[index] !== b[index]) return false;
    return true;
  }

  private rowFromPayload(value: Buffer): Row {
    if (this.layout.encode === 'csv') return this.rowFromCsv(value.toString('utf8'));
    if (this.schemaDecoder !== undefined) return this.rowFromRecord(this.schemaDecoder.decodeValue(value));
    return this.rowFromObject(parseObject(value));
  }

  private rowFromRecord(record: unknown): Row {
    const row: Row = new Array(this.layout.width).fill(null);
    this.schemaDecoder!.fill(record, row);
    return row;
  }

  private rowFromObject(fields: Record<string, unknown>): Row {
    const row: Row = new Array(this.layout.width).fill(null);
    const names = this.names;
    for (let c = 0; c < names.length; c++) {
      const name = names[c]!;
      const field = this.inherited[c] ? ownField(fields, name) : fields[name];
      if (field === undefined || field === null) {
        if (this.required[c]) throw new Error(field === undefined ? `missing field "${names[c]}"` : `null value in field "${names[c]}" of a key or NOT NULL column`);
        continue;
      }
      try {
        row[this.positions[c]!] = this.jsonConverters[c]!(field);
      } catch (error) {
        throw new Error(`field "${names[c]}": ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return row;
  }

  private rowFromCsv(line: string): Row {
    const fields = splitCsvLine(line.endsWith('\n') ? line.slice(0, line.endsWith('\r\n') ? -2 : -1) : line, this.layout.delimiter);
    if (fields.length !== this.names.length) throw new Error(`CSV line has ${fields.length} fields, expected ${this.names.length}`);
    const row: Row = new Array(this.layout.width).fill(null);
    for (let c = 0; c < fields.length; c++) {
      const text = fields[c]!;
      if (text === null && this.required[c]) throw new Error(`empty field "${this.names[c]}" of a key or NOT NULL column`);
      try {
        row[this.positions[c]!] = this.textConverters[c]!(text) as Row[number];
      } catch (error) {
        throw new Error(`field "${this.names[c]}": ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return row;
  }

  /** A tombstone's key as a row with only the key columns set. */
  private keyRow(key: Buffer | null): Row {
    if (key === null) throw new Error('tombstone without a key');
    if (this.schemaDecoder !== undefined) {
      const row: Row = new Array(this.layout.width).fill(null);
      if (this.schemaDecoder.fillKey(key, row)) return row;
    }
    const text = key.toString('utf8');
    const keyColumns = this.layout.payload.filter((column) => this.layout.primaryKey.includes(column.position));
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const row = this.rowFromKeyObject(parsed as Record<string, unknown>, keyColumns);
      return row;
    }
    if (keyColumns.length !== 1) throw new Error('the tombstone key is not a JSON object of the key columns');
    const row: Row = new Array(this.layout.width).fill(null);
    const column = keyColumns[0]!;
    const converter = jsonFieldConverter(column.type);
    row[column.position] = converter(parsed === undefined ? text : parsed);
    return row;
  }

  private rowFromKeyObject(fields: Record<string, unknown>, keyColumns: readonly { name: string; type: SourceLayout['payload'][number]['type']; position: number }[]): Row {
    const row: Row = new Array(this.layout.width).fill(null);
    for (const column of keyColumns) {
      const field = ownField(fields, column.name);
      if (field === undefined || field === null) throw new Error(`tombstone key without field "${column.name}"`);
      row[column.position] = jsonFieldConverter(column.type)(field);
    }
    return row;
  }

  private withMetadata(row: Row, partition: number, offset: bigint, timestampMillis: number, key: Buffer | null): Row {
    const layout = this.layout;
    if (layout.partitionPosition !== undefined) row[layout.partitionPosition] = partition;
    if (layout.offsetPosition !== undefined) row[layout.offsetPosition] = offset;
    if (layout.timestampPosition !== undefined) row[layout.timestampPosition] = timestampMillis * MICROS_PER_MILLI;
    if (layout.keyPosition !== undefined) row[layout.keyPosition] = key === null ? null : new Uint8Array(key);
    if (layout.rowIdPosition !== undefined) row[layout.rowIdPosition] = this.nextRowId(partition, offset);
    return row;
  }
}

/**
 * The message's own field `name`: a column named like a property every object inherits
 * (`constructor`, `toString`, `__proto__`) is missing from a message that does not hold it.
 */
function ownField(fields: Record<string, unknown>, name: string): unknown {
  return Object.hasOwn(fields, name) ? fields[name] : undefined;
}

function parseObject(value: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch (error) {
    throw new Error(`invalid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the JSON message is not an object');
  return parsed as Record<string, unknown>;
}

/** One CSV line to fields; an empty unquoted field is null (SQL NULL), a quoted empty one ''. */
export function splitCsvLine(line: string, delimiter: string): (string | null)[] {
  const fields: (string | null)[] = [];
  let i = 0;
  const length = line.length;
  for (;;) {
    if (i < length && line[i] === '"') {
      let text = '';
      i++;
      for (;;) {
        const quote = line.indexOf('"', i);
        if (quote < 0) throw new Error('unterminated quoted CSV field');
        text += line.slice(i, quote);
        if (line[quote + 1] === '"') {
          text += '"';
          i = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
      fields.push(text);
      if (i < length && line[i] !== delimiter) throw new Error('extra text after a quoted CSV field');
    } else {
      const end = line.indexOf(delimiter, i);
      const text = end < 0 ? line.slice(i) : line.slice(i, end);
      fields.push(text === '' ? null : text);
      i = end < 0 ? length : end;
    }
    if (i >= length) break;
    i++; // the delimiter
    if (i === length) {
      fields.push(null);
      break;
    }
  }
  return fields;
}
