// The JavaScript representation of SQL values. One representation per type, chosen for speed on
// hot paths (no wrapper objects for the common scalar types) and exactness where PostgreSQL is
// exact:
//
//   NULL                     null
//   bool                     boolean
//   int2, int4, oid, reg*    number (an integer)
//   int8                     bigint
//   float4, float8           number
//   numeric                  Numeric (exact decimal, numeric.ts)
//   text, varchar, bpchar,
//   name, char               string
//   bytea                    Uint8Array
//   date                     number: days since 1970-01-01 (may be +-Infinity for 'infinity')
//   time                     number: microseconds since midnight
//   timestamp, timestamptz   number: microseconds since 1970-01-01 00:00:00 UTC (timestamp: as
//                            if UTC); +-Infinity for 'infinity'. Exact to the microsecond for
//                            years 1685..2255 (2^53 microseconds); farther dates round.
//   interval                 Interval { months, days, micros }
//   jsonb, json              Jsonb (json.ts)
//   uuid                     string: canonical lowercase text, 8-4-4-4-12 (uuid.ts)
//   array                    SqlArray { elements (Value[]), dims for multi-dimensional }
//
// A row is an array of values; operators exchange batches of rows (see executor/).

import type { Numeric } from './numeric.js';
import type { Jsonb } from './json.js';

export interface Interval {
  readonly months: number;
  readonly days: number;
  readonly micros: number;
}

export interface SqlArray {
  readonly kind: 'array';
  readonly elements: Value[];
  /** Dimension lengths for multi-dimensional arrays; undefined for one dimension. */
  readonly dims?: readonly number[];
}

export type Value =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | Numeric
  | Interval
  | Jsonb
  | SqlArray;

export type Row = Value[];
