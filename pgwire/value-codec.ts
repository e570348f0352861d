// Values on the wire: the per-column encoders of a result (text or binary, chosen once per portal,
// so the row loop is a plain indexed call with no per-row decisions) and the decoding of Bind
// parameters. Text formats are PostgreSQL's, from sql/functions.ts; the few types whose text form
// is the JavaScript value itself (text, integers, booleans) skip the lookup on the hot path.

import type { ColumnDescription, Session } from '../executor/engine/engine.js';
import { SqlError, SqlState } from '../sql/errors.js';
import * as functions from '../sql/functions.js';
import type { EvalContext } from '../sql/functions.js';
import type { DataType } from '../sql/types.js';
import type { Row, Value } from '../sql/value.js';
import { hasBinaryFormat, readBinary, writeBinary } from './binary.js';
import type { MessageWriter } from './message-writer.js';

/** Appends `int32 length | bytes` of a non-null value. */
export type ColumnEncoder = (writer: MessageWriter, value: Value) => void;

const writeString: ColumnEncoder = (writer, value) => {
  writer.lengthPrefixedText(value as string);
};
const writeNumberText: ColumnEncoder = (writer, value) => {
  writer.lengthPrefixedText(String(value));
};
const writeBoolText: ColumnEncoder = (writer, value) => {
  writer.int32(1).int8(value ? 0x74 : 0x66);
};

/** The formatting context of a session: TimeZone, DateStyle, IntervalStyle, extra_float_digits. */
export function evalContextOf(session: Session): EvalContext {
  const base = functions.DEFAULT_EVAL_CONTEXT;
  const extraFloatDigits = Number(session.setting('extra_float_digits') ?? base.extraFloatDigits);
  return {
    statementTimeMicros: Date.now() * 1000,
    timeZone: session.setting('TimeZone') ?? session.setting('timezone') ?? base.timeZone,
    dateStyle: session.setting('DateStyle') ?? session.setting('datestyle') ?? base.dateStyle,
    intervalStyle: session.setting('IntervalStyle') ?? session.setting('intervalstyle') ?? base.intervalStyle,
    extraFloatDigits: Number.isFinite(extraFloatDigits) ? extraFloatDigits : base.extraFloatDigits,
    // reg* values print as names (regclass 't', regtype 'integer').
    ...(session.objectName === undefined ? {} : { objectName: session.objectName.bind(session) }),
    ...(session.objectOid === undefined ? {} : { objectOid: session.objectOid.bind(session) }),
  };
}

/** Expands the Bind result-format list (none: all text; one: for all; else one per column). */
export function resultFormats(requested: readonly number[], columnCount: number): number[] {
  if (requested.length > 1 && requested.length !== columnCount) {
    throw new SqlError(SqlState.protocolViolation, `bind message has ${requested.length} result formats but query has ${columnCount} columns`);
  }
  const formats: number[] = [];
  for (let i = 0; i < columnCount; i++) formats.push(requested.length === 0 ? 0 : requested.length === 1 ? requested[0]! : requested[i]!);
  return formats;
}

export function columnEncoders(columns: readonly ColumnDescription[], formats: readonly number[], context: EvalContext): ColumnEncoder[] {
  return columns.map((column, i) => {
    const format = formats[i] ?? 0;
    if (format === 0) return textEncoder(column.type, context);
    if (format === 1) return binaryEncoder(column.type, context);
    throw new SqlError(SqlState.invalidParameterValue, `unsupported format code: ${format}`);
  });
}

function textEncoder(type: DataType, context: EvalContext): ColumnEncoder {
  switch (type.name) {
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
    case 'char':
    case 'unknown':
      return writeString;
    case 'int2':
    case 'int4':
    case 'int8':
    case 'oid':
      return writeNumberText;
    case 'bool':
      return writeBoolText;
    default:
      return (writer, value) => {
        writer.lengthPrefixedText(functions.formatValue(value, type, context));
      };
  }
}

function binaryEncoder(type: DataType, context: EvalContext): ColumnEncoder {
  if (!hasBinaryFormat(type)) {
    throw new SqlError(SqlState.featureNotSupported, `no binary output function available for type ${type.name}`);
  }
  return (writer, value) => writeBinary(writer, value, type, context);
}

/** Appends one DataRow message. */
export function writeDataRow(writer: MessageWriter, row: Row, encoders: readonly ColumnEncoder[]): void {
  writer.begin('D').int16(encoders.length);
  for (let i = 0; i < encoders.length; i++) {
    const value = row[i];
    if (value === null || value === undefined) writer.int32(-1);
    else encoders[i]!(writer, value);
  }
  writer.end();
}

/** Decodes the Bind parameters for a statement's parameter types. */
export function decodeParameters(
  parameters: readonly (Buffer | null)[],
  formats: readonly number[],
  types: readonly DataType[],
  context: EvalContext,
): Value[] {
  const values: Value[] = [];
  for (let i = 0; i < parameters.length; i++) {
    const bytes = parameters[i]!;
    if (bytes === null) {
      values.push(null);
      continue;
    }
    const type = types[i]!;
    if (formats[i] === 1) {
      values.push(readBinary(bytes, type, context, i + 1));
      continue;
    }
    const text = bytes.toString('utf8');
    if (type.typmod === -1 && (type.name === 'text' || type.name === 'varchar' || type.name === 'unknown')) {
      values.push(text);
      continue;
    }
    try {
      values.push(functions.parseValue(text, type, context));
    } catch (error) {
      if (error instanceof SqlError) throw error;
      throw new SqlError(SqlState.invalidTextRepresentation, `invalid input for parameter $${i + 1}: ${String(error)}`);
    }
  }
  return values;
}
