// PostgreSQL's text input and output for every type of types.ts: `formatValue` (the *_out
// functions, byte for byte with PostgreSQL 15 under the settings of the EvalContext) and
// `parseValue` (the *_in functions, with PostgreSQL's error messages and SQLSTATEs). Arrays use
// PostgreSQL's `{1,2,NULL}` syntax and quoting rules. Typmods are not applied here (see casts.ts),
// except that parsing into a typed column is the caller's business.

import { SqlError, SqlState } from './errors.js';
import type { DataType } from './types.js';
import type { Interval, SqlArray, Value } from './value.js';
import type { EvalContext } from './eval-context.js';
import { DEFAULT_EVAL_CONTEXT } from './eval-context.js';
import { Numeric } from './numeric.js';
import { Jsonb, formatJson, parseJson } from './json.js';
import { formatFloat4, formatFloat8, parseFloat } from './float-format.js';
import { formatDate, formatTime, formatTimestamp, formatTimestamptz, parseDate, parseTime, parseTimestamp, parseTimestamptz } from './datetime.js';
import { formatInterval, parseInterval } from './interval.js';
import { parseUuid } from './uuid.js';

const hexDigits = '0123456789abcdef';

export function formatBytea(bytes: Uint8Array): string {
  let out = '\\x';
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    out += hexDigits[byte >> 4]! + hexDigits[byte & 15]!;
  }
  return out;
}

/** byteain: hex (\x...) or the escape format (\\ and \ooo octal). */
export function parseBytea(text: string): Uint8Array {
  if (text.startsWith('\\x') || text.startsWith('\\X')) {
    const bytes: number[] = [];
    let pending = -1;
    for (let i = 2; i < text.length; i++) {
      const c = text[i]!;
      if (c === ' ' || c === '\n' || c === '\t' || c === '\r') {
        if (pending >= 0) throw new SqlError(SqlState.invalidParameterValue, `invalid hexadecimal digit: "${c}"`);
        continue;
      }
      const digit = parseInt(c, 16);
      if (Number.isNaN(digit)) throw new SqlError(SqlState.invalidParameterValue, `invalid hexadecimal digit: "${c}"`);
      if (pending < 0) pending = digit;
      else {
        bytes.push(pending * 16 + digit);
        pending = -1;
      }
    }
    if (pending >= 0) throw new SqlError(SqlState.invalidParameterValue, 'invalid hexadecimal data: odd number of digits');
    return Uint8Array.from(bytes);
  }
  const encoded = Buffer.from(text, 'utf8');
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; i++) {
    const byte = encoded[i]!;
    if (byte !== 0x5c) {
      bytes.push(byte);
      continue;
    }
    if (encoded[i + 1] === 0x5c) {
      bytes.push(0x5c);
      i++;
      continue;
    }
    const octal = encoded.subarray(i + 1, i + 4).toString('latin1');
    if (/^[0-3][0-7][0-7]$/.test(octal)) {
      bytes.push(parseInt(octal, 8));
      i += 3;
      continue;
    }
    throw new SqlError(SqlState.invalidTextRepresentation, 'invalid input syntax for type bytea');
  }
  return Uint8Array.from(bytes);
}

function formatBool(value: boolean): string {
  return value ? 't' : 'f';
}

/** boolin: a prefix of true/false/yes/no, on/off (at least 2 letters), 1/0, case-insensitive. */
export function parseBool(text: string): boolean {
  const word = text.trim().toLowerCase();
  if (word.length > 0) {
    if ('true'.startsWith(word) || 'yes'.startsWith(word)) return true;
    if ('false'.startsWith(word) || 'no'.startsWith(word)) return false;
    if (word === '1' || (word.length >= 2 && 'on'.startsWith(word))) return true;
    if (word === '0' || (word.length >= 2 && 'off'.startsWith(word))) return false;
  }
  throw new SqlError(SqlState.invalidTextRepresentation, `invalid input syntax for type boolean: "${text}"`);
}

const integerLimits = {
  int2: { min: -32768, max: 32767, name: 'smallint' },
  int4: { min: -2147483648, max: 2147483647, name: 'integer' },
  oid: { min: -2147483648, max: 4294967295, name: 'oid' },
} as const;

/** int2in / int4in / oidin. */
export function parseInteger(text: string, typeName: 'int2' | 'int4' | 'oid'): number {
  const limits = integerLimits[typeName];
  const trimmed = text.trim();
  if (!/^[+-]?\d+$/.test(trimmed)) {
    throw new SqlError(SqlState.invalidTextRepresentation, `invalid input syntax for type ${limits.name}: "${text}"`);
  }
  const value = Number(trimmed);
  if (value < limits.min || value > limits.max || !Number.isSafeInteger(value)) {
    throw new SqlError(SqlState.numericValueOutOfRange, `value "${text}" is out of range for type ${limits.name}`);
  }
  if (typeName === 'oid' && value < 0) return value + 4294967296;
  return value + 0;
}

const INT8_MIN = -9223372036854775808n;
const INT8_MAX = 9223372036854775807n;

/** int8in. */
export function parseInt8(text: string): bigint {
  const trimmed = text.trim();
  if (!/^[+-]?\d+$/.test(trimmed)) {
    throw new SqlError(SqlState.invalidTextRepresentation, `invalid input syntax for type bigint: "${text}"`);
  }
  const value = BigInt(trimmed);
  if (value < INT8_MIN || value > INT8_MAX) {
    throw new SqlError(SqlState.numericValueOutOfRange, `value "${text}" is out of range for type bigint`);
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Arrays

function needsQuotes(text: string): boolean {
  if (text.length === 0) return true;
  if (text.toLowerCase() === 'null') return true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === '\\' || c === '{' || c === '}' || c === ',' || c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f') return true;
  }
  return false;
}

function quoteElement(text: string): string {
  if (!needsQuotes(text)) return text;
  return '"' + text.replace(/[\\"]/g, '\\$&') + '"';
}

export function formatArray(array: SqlArray, element: DataType, context: EvalContext): string {
  const dims = array.dims ?? [array.elements.length];
  if (array.elements.length === 0) return '{}';
  let index = 0;
  const delimiter = element.name === 'array' ? ',' : ',';
  const emit = (level: number): string => {
    const parts: string[] = [];
    for (let i = 0; i < dims[level]!; i++) {
      if (level === dims.length - 1) {
        const item = array.elements[index++] ?? null;
        parts.push(item === null ? 'NULL' : quoteElement(formatValue(item, element, context)));
      } else {
        parts.push(emit(level + 1));
      }
    }
    return '{' + parts.join(delimiter) + '}';
  };
  return emit(0);
}

function arraySyntaxError(text: string, detail: string): SqlError {
  return new SqlError(SqlState.invalidTextRepresentation, `malformed array literal: "${text}"`, { detail });
}

/** array_in: `{a,"b c",NULL,{nested}}`, optional `[1:3]=` bounds are accepted and ignored. */
export function parseArray(text: string, element: DataType, context: EvalContext): SqlArray {
  let position = 0;
  const source = text.replace(/^\s*\[[^\]]*\](\[[^\]]*\])*\s*=\s*/, '');
  const skip = () => {
    while (position < source.length && /\s/.test(source[position]!)) position++;
  };
  skip();
  if (source[position] !== '{') throw arraySyntaxError(text, 'Array value must start with "{" or dimension information.');
  const elements: Value[] = [];
  const dims: number[] = [];
  const parseLevel = (level: number): void => {
    position++; // '{'
    let count = 0;
    skip();
    if (source[position] === '}') {
      position++;
      if (level === 0) return;
      throw arraySyntaxError(text, 'Multidimensional arrays must have sub-arrays with matching dimensions.');
    }
    for (;;) {
      skip();
      if (source[position] === '{') {
        parseLevel(level + 1);
      } else {
        let raw = '';
        let quoted = false;
        if (source[position] === '"') {
          quoted = true;
          position++;
          while (position < source.length && source[position] !== '"') {
            if (source[position] === '\\') position++;
            raw += source[position] ?? '';
            position++;
          }
          if (position >= source.length) throw arraySyntaxError(text, 'Unexpected end of input.');
          position++;
        } else {
          while (position < source.length && !/[,}{]/.test(source[position]!)) {
            if (source[position] === '\\') position++;
            raw += source[position] ?? '';
            position++;
          }
          raw = raw.trim();
          if (raw.length === 0) throw arraySyntaxError(text, `Unexpected "${source[position] ?? ''}" character.`);
        }
        if (dims.length > level + 1) throw arraySyntaxError(text, 'Multidimensional arrays must have sub-arrays with matching dimensions.');
        elements.push(!quoted && raw.toLowerCase() === 'null' ? null : parseValue(raw, element, context));
      }
      count++;
      skip();
      const next = source[position];
      if (next === ',') {
        position++;
        continue;
      }
      if (next === '}') {
        position++;
        break;
      }
      throw arraySyntaxError(text, next === undefined ? 'Unexpected end of input.' : `Unexpected "${next}" character.`);
    }
    if (dims[level] === undefined) dims[level] = count;
    else if (dims[level] !== count) throw arraySyntaxError(text, 'Multidimensional arrays must have sub-arrays with matching dimensions.');
  };
  parseLevel(0);
  skip();
  if (position < source.length) throw arraySyntaxError(text, 'Junk after closing right brace.');
  if (dims.length <= 1) return { kind: 'array', elements };
  return { kind: 'array', elements, dims };
}

// ---------------------------------------------------------------------------------------------
// Dispatch

/** PostgreSQL's text output of a non-null value, byte for byte. */
export function formatValue(value: Value, type: DataType, context: EvalContext = DEFAULT_EVAL_CONTEXT): string {
  switch (type.name) {
    case 'bool':
      return formatBool(value as boolean);
    case 'int2':
    case 'int4':
    case 'oid':
      return String(value);
    case 'regclass':
    case 'regproc':
    case 'regtype':
    case 'regnamespace':
    case 'regprocedure':
      return context.objectName?.(type.name, value as number) ?? String(value);
    case 'int8':
      return (value as bigint).toString();
    case 'float4':
      return formatFloat4(value as number, context.extraFloatDigits);
    case 'float8':
      return formatFloat8(value as number, context.extraFloatDigits);
    case 'numeric':
      return (value as Numeric).toString();
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
    case 'char':
    case 'unknown':
    case 'uuid':
      return value as string;
    case 'bytea':
      return formatBytea(value as Uint8Array);
    case 'date':
      return formatDate(value as number);
    case 'time':
      return formatTime(value as number);
    case 'timestamp':
      return formatTimestamp(value as number);
    case 'timestamptz':
      return formatTimestamptz(value as number, context.timeZone);
    case 'interval':
      return formatInterval(value as Interval, context.intervalStyle);
    case 'jsonb':
    case 'json':
      return formatJson((value as Jsonb).value);
    case 'array':
      if (type.vector !== undefined) return (value as SqlArray).elements.map((element) => String(element ?? 0)).join(' ');
      // A record carried as an array of its fields prints as PostgreSQL prints a record: (x,n).
      if (type.fields !== undefined) return `(${(value as SqlArray).elements.map((element) => (element === null ? '' : formatValue(element, type.element!, context))).join(',')})`;
      return formatArray(value as SqlArray, type.element ?? { name: 'text', typmod: -1 }, context);
    case 'void':
      return '';
    case 'record':
      return String(value);
  }
}

/** PostgreSQL's text input; throws SqlError 22P02/22007/22003... with PostgreSQL's messages. */
export function parseValue(text: string, type: DataType, context: EvalContext = DEFAULT_EVAL_CONTEXT): Value {
  switch (type.name) {
    case 'bool':
      return parseBool(text);
    case 'int2':
    case 'int4':
      return parseInteger(text, type.name);
    case 'oid':
      return parseInteger(text, 'oid');
    case 'regclass':
    case 'regproc':
    case 'regtype':
    case 'regnamespace':
    case 'regprocedure':
      if (context.objectOid !== undefined && !/^\s*[-+]?[0-9]+\s*$/.test(text)) return context.objectOid(type.name, text);
      return parseInteger(text, 'oid');
    case 'int8':
      return parseInt8(text);
    case 'float4':
      return parseFloat(text, true);
    case 'float8':
      return parseFloat(text, false);
    case 'numeric':
      return Numeric.parse(text);
    case 'text':
    case 'varchar':
    case 'name':
    case 'unknown':
      return text;
    case 'bpchar':
      return text;
    case 'char':
      return text.length === 0 ? '' : String.fromCodePoint(text.codePointAt(0)!);
    case 'bytea':
      return parseBytea(text);
    case 'uuid':
      return parseUuid(text);
    case 'date':
      return parseDate(text, context);
    case 'time':
      return parseTime(text, context);
    case 'timestamp':
      return parseTimestamp(text, context);
    case 'timestamptz':
      return parseTimestamptz(text, context);
    case 'interval':
      return parseInterval(text);
    case 'jsonb':
    case 'json':
      return new Jsonb(parseJson(text, 'json'));
    case 'array':
      if (type.vector !== undefined) {
        const words = text.trim() === '' ? [] : text.trim().split(/\s+/);
        return { kind: 'array', elements: words.map((word) => parseValue(word, type.element!, context)) };
      }
      return parseArray(text, type.element ?? { name: 'text', typmod: -1 }, context);
    case 'void':
    case 'record':
      throw new SqlError(SqlState.featureNotSupported, `cannot accept a value of type ${type.name}`);
  }
}
