// `connector = 'datagen'`: rows of the declared schema, per column a sequence or random values
// (RisingWave's options, checked at CREATE: unknown keys and bad values are 22023, an unknown
// column 42703, an unsupported column type 0A000).
//
//   fields.<col>.kind = 'sequence' | 'random' (default random)
//   sequence: fields.<col>.start (default 0), fields.<col>.end (default 32767), inclusive
//   random numbers: fields.<col>.min (default 0), fields.<col>.max (default 32767), fields.<col>.seed
//   random varchar: fields.<col>.length (default 10)
//   random timestamps: fields.<col>.max_past (an interval, default 1 day) before
//     fields.<col>.basetime (a timestamp; default: when the source starts reading)
//   datagen.rows.per.second (default 10, over all splits), datagen.split.num (default 1)
//
// Row g (g = split + offset * splits) is a function of the options and g alone: the sequence
// value is start + g and each random column draws from a generator seeded with (seed, column, g),
// so a restart regenerates the same rows. With sequence columns the source ends after the
// shortest sequence; without, it runs forever at the rate limit.

import type { ColumnDef } from '../../../sql/catalog.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import { parseInterval } from '../../../sql/interval.js';
import { Numeric } from '../../../sql/numeric.js';
import { parseValue } from '../../../sql/text-format.js';
import type { TypeName } from '../../../sql/types.js';
import type { Row, Value } from '../../../sql/value.js';
import { invalidOption, parseIntegerOption, type SplitProducer } from './split-producer.js';

type FieldKind = 'sequence' | 'random';

interface FieldSpec {
  readonly position: number;
  readonly type: TypeName;
  readonly kind: FieldKind;
  readonly start: number;
  readonly end: number;
  readonly min: number;
  readonly max: number;
  readonly length: number;
  readonly seed: number;
  readonly maxPastUs: number;
  /** Microseconds since 1970; undefined: when the reader starts. */
  readonly baseTimeUs: number | undefined;
}

export interface DatagenOptions {
  readonly fields: readonly FieldSpec[];
  readonly rowsPerSecond: number;
  readonly splits: number;
  /** Rows in all, over all splits (the shortest sequence), undefined without sequences. */
  readonly rowCount: number | undefined;
}

const SUPPORTED: ReadonlySet<TypeName> = new Set<TypeName>(['bool', 'int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'varchar', 'text', 'date', 'timestamp', 'timestamptz']);
const FIELD_KEYS = new Set(['kind', 'start', 'end', 'min', 'max', 'length', 'seed', 'max_past', 'max_past_mode', 'basetime']);
const INTEGER_RANGE: Partial<Record<TypeName, [number, number]>> = {
  int2: [-32768, 32767],
  int4: [-2147483648, 2147483647],
  int8: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};
const DAY_US = 86_400_000_000;

function parseNumberOption(key: string, text: string, type: TypeName): number {
  const range = INTEGER_RANGE[type];
  if (range !== undefined) return parseIntegerOption(key, text, range[0], range[1]);
  const value = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(value)) throw invalidOption(`invalid value for ${key}: "${text}"`, 'Expected a number.');
  return value;
}

export function datagenOptions(options: Readonly<Record<string, string>>, columns: readonly ColumnDef[]): DatagenOptions {
  const byColumn = new Map<string, Map<string, string>>();
  for (const [key, text] of Object.entries(options)) {
    if (key === 'connector' || key === 'datagen.rows.per.second' || key === 'datagen.split.num') continue;
    const match = /^fields\.(.+)\.([a-z_]+)$/.exec(key);
    if (match === null || !FIELD_KEYS.has(match[2]!)) {
      throw invalidOption(`unknown datagen option "${key}"`, 'Known options: datagen.rows.per.second, datagen.split.num, fields.<column>.{kind, start, end, min, max, length, seed, max_past, max_past_mode, basetime}.');
    }
    const column = match[1]!;
    if (!columns.some((candidate) => candidate.name === column)) throw new SqlError(SqlState.undefinedColumn, `datagen option "${key}" names column "${column}", which does not exist`);
    if (!byColumn.has(column)) byColumn.set(column, new Map());
    byColumn.get(column)!.set(match[2]!, text);
  }
  const rowsPerSecond = parseIntegerOption('datagen.rows.per.second', options['datagen.rows.per.second'] ?? '10', 1, 1e9);
  const splits = parseIntegerOption('datagen.split.num', options['datagen.split.num'] ?? '1', 1, 1024);
  const fields: FieldSpec[] = [];
  let rowCount: number | undefined;
  columns.forEach((column, position) => {
    const own = byColumn.get(column.name) ?? new Map<string, string>();
    const type = column.type.name;
    if (!SUPPORTED.has(type)) {
      throw new SqlError(SqlState.featureNotSupported, `datagen cannot generate column "${column.name}" of type ${type}`, {
        hint: 'datagen generates boolean, smallint, integer, bigint, real, double precision, numeric, varchar, text, date, timestamp and timestamptz columns.',
      });
    }
    const kindText = (own.get('kind') ?? 'random').toLowerCase();
    if (kindText !== 'sequence' && kindText !== 'random') throw invalidOption(`invalid value for fields.${column.name}.kind: "${own.get('kind')!}"`, "Use 'sequence' or 'random'.");
    const kind = kindText as FieldKind;
    const numeric = INTEGER_RANGE[type] !== undefined || type === 'float4' || type === 'float8' || type === 'numeric';
    const key = (name: string): string => `fields.${column.name}.${name}`;
    for (const name of own.keys()) {
      const allowed =
        name === 'kind' ||
        (kind === 'sequence' ? (name === 'start' || name === 'end') && (numeric || type === 'varchar' || type === 'text') : name === 'seed' || ((name === 'min' || name === 'max') && numeric) || (name === 'length' && (type === 'varchar' || type === 'text')) || ((name === 'max_past' || name === 'max_past_mode' || name === 'basetime') && (type === 'timestamp' || type === 'timestamptz' || type === 'date')));
      if (!allowed) throw invalidOption(`datagen option "${key(name)}" does not apply to a ${kind} column of type ${type}`);
    }
    if (kind === 'sequence' && !numeric && type !== 'varchar' && type !== 'text') throw invalidOption(`datagen cannot make a sequence of type ${type} (column "${column.name}")`, 'Sequences are numbers (or their text).');
    const sequenceType: TypeName = numeric ? type : 'int8';
    const start = own.has('start') ? parseNumberOption(key('start'), own.get('start')!, sequenceType === 'numeric' || sequenceType.startsWith('float') ? 'int8' : sequenceType) : 0;
    const end = own.has('end') ? parseNumberOption(key('end'), own.get('end')!, sequenceType === 'numeric' || sequenceType.startsWith('float') ? 'int8' : sequenceType) : 32767;
    if (kind === 'sequence' && end < start) throw invalidOption(`fields.${column.name}.end (${end}) is less than fields.${column.name}.start (${start})`);
    const min = own.has('min') ? parseNumberOption(key('min'), own.get('min')!, type) : 0;
    const max = own.has('max') ? parseNumberOption(key('max'), own.get('max')!, type) : INTEGER_RANGE[type] !== undefined ? Math.min(32767, INTEGER_RANGE[type]![1]) : 32767;
    if (max < min) throw invalidOption(`fields.${column.name}.max (${max}) is less than fields.${column.name}.min (${min})`);
    const length = own.has('length') ? parseIntegerOption(key('length'), own.get('length')!, 0, 1 << 20) : 10;
    const seed = own.has('seed') ? parseIntegerOption(key('seed'), own.get('seed')!, 0, Number.MAX_SAFE_INTEGER) : 0;
    let maxPastUs = DAY_US;
    if (own.has('max_past')) {
      let interval;
      try {
        interval = parseInterval(own.get('max_past')!);
      } catch {
        throw invalidOption(`invalid value for ${key('max_past')}: "${own.get('max_past')!}"`, "Expected an interval such as '2h 37min'.");
      }
      maxPastUs = interval.months * 30 * DAY_US + interval.days * DAY_US + interval.micros;
      if (!(maxPastUs >= 0)) throw invalidOption(`${key('max_past')} must not be negative`);
    }
    const mode = own.get('max_past_mode');
    if (mode !== undefined && mode.toLowerCase() !== 'absolute' && mode.toLowerCase() !== 'relative') throw invalidOption(`invalid value for ${key('max_past_mode')}: "${mode}"`, "Use 'absolute' or 'relative'.");
    let baseTimeUs: number | undefined;
    if (own.has('basetime')) {
      try {
        baseTimeUs = parseValue(own.get('basetime')!, { name: 'timestamptz', typmod: -1 }) as number;
      } catch {
        throw invalidOption(`invalid value for ${key('basetime')}: "${own.get('basetime')!}"`, "Expected a timestamp such as '2026-01-01 00:00:00+00'.");
      }
    }
    if (kind === 'sequence') rowCount = Math.min(rowCount ?? Number.POSITIVE_INFINITY, end - start + 1);
    fields.push({ position, type, kind, start, end, min, max, length, seed, maxPastUs, baseTimeUs });
  });
  return { fields, rowsPerSecond, splits, rowCount };
}

const TWO_32 = 4294967296;

/** The datagen producer of a source: split i makes rows i, i + k, ... */
export class DatagenProducer implements SplitProducer {
  readonly splits: number;
  readonly maxChunkRows: number;
  readonly unitsPerSecond: number;
  /** False when a random date or timestamp has no basetime (it is relative to when the reader starts). */
  readonly deterministic: boolean;
  private readonly baseTimeUs: number;
  private a = 0;
  private b = 0;
  private c = 0;
  private d = 0;

  constructor(
    private readonly options: DatagenOptions,
    private readonly width: number,
    /** Where row g's number goes (a bigint: a replayable source's row id), -1 for nowhere. */
    private readonly rowNumberPosition = -1,
  ) {
    this.splits = options.splits;
    this.deterministic = options.fields.every((field) => field.kind === 'sequence' || field.baseTimeUs !== undefined || (field.type !== 'date' && field.type !== 'timestamp' && field.type !== 'timestamptz'));
    this.unitsPerSecond = options.rowsPerSecond / options.splits;
    this.maxChunkRows = Math.max(1, Math.min(1024, Math.ceil(this.unitsPerSecond)));
    this.baseTimeUs = Date.now() * 1000;
  }

  end(split: number): number | undefined {
    const total = this.options.rowCount;
    if (total === undefined) return undefined;
    return total <= split ? 0 : Math.ceil((total - split) / this.splits);
  }

  produce(split: number, offset: number, limit: number, out: Row[], maxRows: number): number {
    const stop = Math.min(limit, offset + maxRows);
    for (let at = offset; at < stop; at++) out.push(this.row(split + at * this.splits));
    return stop;
  }

  produceRange(start: number, end: number, out: Row[], maxRows: number): number {
    const stop = Math.min(end, start + maxRows);
    for (let g = start; g < stop; g++) out.push(this.row(g));
    return stop;
  }

  /** Row g: a function of the options and g alone (and of the start time for a timestamp without basetime). */
  private row(g: number): Row {
    const fields = this.options.fields;
    const row: Row = new Array(this.width).fill(null);
    for (let f = 0; f < fields.length; f++) {
      const field = fields[f]!;
      row[field.position] = field.kind === 'sequence' ? sequenceValue(field, field.start + g) : this.randomValue(field, f, g);
    }
    if (this.rowNumberPosition >= 0) row[this.rowNumberPosition] = BigInt(g);
    return row;
  }

  private randomValue(field: FieldSpec, column: number, g: number): Value {
    this.reseed(field.seed, column, g);
    switch (field.type) {
      case 'bool':
        return this.next32() >= 2147483648;
      case 'int2':
      case 'int4':
        return field.min + Math.floor(this.uniform() * (field.max - field.min + 1));
      case 'int8':
        return BigInt(field.min + Math.floor(this.uniform() * (field.max - field.min + 1)));
      case 'float4':
        return Math.fround(field.min + this.uniform() * (field.max - field.min));
      case 'float8':
        return field.min + this.uniform() * (field.max - field.min);
      case 'numeric':
        return Numeric.fromFloat8(field.min + this.uniform() * (field.max - field.min));
      case 'varchar':
      case 'text': {
        let text = '';
        for (let i = 0; i < field.length; i++) text += String.fromCharCode(97 + Math.floor(this.uniform() * 26));
        return text;
      }
      case 'date': {
        const base = field.baseTimeUs ?? this.baseTimeUs;
        return Math.floor((base - Math.floor(this.uniform() * (field.maxPastUs + 1))) / DAY_US);
      }
      default: {
        // timestamp, timestamptz: millisecond precision, like RisingWave's.
        const base = field.baseTimeUs ?? this.baseTimeUs;
        const micros = base - Math.floor(this.uniform() * (field.maxPastUs + 1));
        return Math.floor(micros / 1000) * 1000;
      }
    }
  }

  private reseed(seed: number, column: number, g: number): void {
    this.a = mix32((g >>> 0) ^ 0x9e3779b9 ^ (seed >>> 0));
    this.b = mix32((Math.floor(g / TWO_32) >>> 0) ^ Math.imul(column + 1, 0x85ebca6b) ^ (Math.floor(seed / TWO_32) >>> 0));
    this.c = mix32(this.a ^ this.b ^ 0xc2b2ae35);
    this.d = 1;
    for (let i = 0; i < 8; i++) this.next32();
  }

  /** sfc32. */
  private next32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  private uniform(): number {
    return this.next32() / TWO_32;
  }
}

function sequenceValue(field: FieldSpec, value: number): Value {
  switch (field.type) {
    case 'int8':
      return BigInt(value);
    case 'numeric':
      return Numeric.fromInteger(value);
    case 'varchar':
    case 'text':
      return String(value);
    default:
      return value;
  }
}

function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
