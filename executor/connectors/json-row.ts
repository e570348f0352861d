// A row as a JSON object for sinks: keys are column names; integers, floats, booleans and numerics
// are JSON numbers/booleans (numeric keeps its exact digits; int8 beyond 2^53 too, as JSON allows),
// jsonb is embedded as JSON, every other type is its PostgreSQL text (timestamps, dates, intervals,
// bytea as \x hex). Built per column once, so encoding a row is a loop over prebuilt functions.

import { formatValue } from '../../sql/functions.js';
import type { DataType } from '../../sql/types.js';
import type { Row, Value } from '../../sql/value.js';
import { escapeJsonString } from '../../sql/json.js';

type Encoder = (value: Value) => string;

function encoderOf(columnType: DataType): Encoder {
  switch (columnType.name) {
    case 'int2':
    case 'int4':
    case 'int8':
    case 'numeric':
      return (value) => {
        const text = formatValue(value, columnType);
        return /^-?\d/.test(text) ? text : JSON.stringify(text); // NaN / Infinity are not JSON numbers
      };
    case 'float4':
    case 'float8':
      return (value) => (Number.isFinite(value as number) ? formatValue(value, columnType) : JSON.stringify(formatValue(value, columnType)));
    case 'bool':
      return (value) => (value === true ? 'true' : 'false');
    case 'json':
    case 'jsonb':
      return (value) => formatValue(value, columnType);
    default:
      return (value) => escapeJsonString(formatValue(value, columnType));
  }
}

export class JsonRowEncoder {
  private readonly prefixes: string[];
  private readonly encoders: Encoder[];

  constructor(
    columns: readonly { readonly name: string; readonly type: DataType }[],
    /** Which row positions to write (the visible columns), in order. */
    private readonly positions: readonly number[],
  ) {
    this.prefixes = positions.map((position, index) => `${index === 0 ? '{' : ','}${escapeJsonString(columns[position]!.name)}:`);
    this.encoders = positions.map((position) => encoderOf(columns[position]!.type));
  }

  encode(row: Row): string {
    let out = '';
    for (let i = 0; i < this.positions.length; i++) {
      const value = row[this.positions[i]!] ?? null;
      out += this.prefixes[i]! + (value === null ? 'null' : this.encoders[i]!(value));
    }
    return this.positions.length === 0 ? '{}' : out + '}';
  }
}
