// Converting decoded field values (from JSON or CSV text) to oxbow's value representation
// (sql/value.ts) for one column type. A converter is built once per column when a source starts,
// so decoding a message is a loop over prebuilt functions with no per-row type dispatch.
// Text goes through sql/functions.ts parseValue (PostgreSQL's input syntax: timestamps, numerics,
// intervals...); JSON numbers and booleans are checked against the column's type directly.
// A value that does not fit throws a plain Error whose message goes to source_errors.

import { parseValue } from '../../sql/functions.js';
import { parseJsonb } from '../../sql/json.js';
import type { DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';

export type FieldConverter = (field: unknown) => Value;

const INT_RANGE: Record<string, [number, number]> = {
  int2: [-32768, 32767],
  int4: [-2147483648, 2147483647],
};

function describe(field: unknown): string {
  if (Array.isArray(field)) return 'an array';
  if (typeof field === 'object') return 'an object';
  return `${typeof field} ${JSON.stringify(field)}`;
}

function parseText(text: string, columnType: DataType): Value {
  try {
    return parseValue(text, columnType);
  } catch (error) {
    throw new Error(error instanceof Error ? error.message : String(error));
  }
}

/** A converter from a JSON-decoded field (JSON.parse output) to a value of `columnType`. */
export function jsonFieldConverter(columnType: DataType): FieldConverter {
  const name = columnType.name;
  const wrongType = (field: unknown): Error => new Error(`cannot convert ${describe(field)} to ${name}`);
  switch (name) {
    case 'int2':
    case 'int4': {
      const [low, high] = INT_RANGE[name]!;
      return (field) => {
        if (field === null || field === undefined) return null;
        if (typeof field === 'number') {
          if (!Number.isInteger(field)) throw new Error(`invalid input syntax for type ${name === 'int2' ? 'smallint' : 'integer'}: "${field}"`);
          if (field < low || field > high) throw new Error(`value "${field}" is out of range for type ${name === 'int2' ? 'smallint' : 'integer'}`);
          return field;
        }
        if (typeof field === 'string') return parseText(field, columnType);
        throw wrongType(field);
      };
    }
    case 'int8':
      return (field) => {
        if (field === null || field === undefined) return null;
        if (typeof field === 'number') {
          if (!Number.isInteger(field)) throw new Error(`invalid input syntax for type bigint: "${field}"`);
          // JSON.parse has already rounded integers beyond 2^53: refuse rather than store a wrong value.
          if (!Number.isSafeInteger(field)) throw new Error(`bigint value ${field} is beyond 2^53: send it as a JSON string to keep it exact`);
          return BigInt(field);
        }
        if (typeof field === 'string') return parseText(field, columnType);
        throw wrongType(field);
      };
    case 'float4':
    case 'float8':
      return (field) => {
        if (field === null || field === undefined) return null;
        if (typeof field === 'number') return name === 'float4' ? Math.fround(field) : field;
        if (typeof field === 'string') return parseText(field, columnType);
        throw wrongType(field);
      };
    case 'numeric':
      return (field) => {
        if (field === null || field === undefined) return null;
        if (typeof field === 'number') return parseText(String(field), columnType);
        if (typeof field === 'string') return parseText(field, columnType);
        throw wrongType(field);
      };
    case 'bool':
      return (field) => {
        if (field === null || field === undefined) return null;
        if (typeof field === 'boolean') return field;
        if (typeof field === 'string') return parseText(field, columnType);
        throw wrongType(field);
      };
    case 'text':
    case 'varchar':
    case 'bpchar':
    case 'name':
      return (field) => {
        if (field === null || field === undefined) return null;
        if (typeof field === 'string') return field;
        if (typeof field === 'number' || typeof field === 'boolean') return String(field);
        throw wrongType(field);
      };
    case 'json':
    case 'jsonb':
      return (field) => (field === null || field === undefined ? null : parseJsonb(JSON.stringify(field)));
    default:
      return (field) => {
        if (field === null || field === undefined) return null;
        if (typeof field === 'string') return parseText(field, columnType);
        if (typeof field === 'number' || typeof field === 'boolean') return parseText(String(field), columnType);
        throw wrongType(field);
      };
  }
}

/** A converter from CSV field text (null: an empty unquoted field) to a value of `columnType`. */
export function textFieldConverter(columnType: DataType): (text: string | null) => Value {
  return (text) => (text === null ? null : parseText(text, columnType));
}
