// Scan of a relation through TableAccess: the current rows, the rows AS OF a moment (the moment
// evaluated once per execution and mapped to an epoch by TableAccess.epochAt), or every version
// valid BETWEEN two moments with their validity period as two timestamptz columns. The pushed
// projection and filter are applied while scanning. A scan with a `lookup` (planner rule
// index_lookup) reads only those primary keys, in key order, through TableAccess.lookup.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { type as scalar } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { epochToMillis, type Epoch } from '../../sql/epoch.js';
import { compareValues, parseValue } from '../../sql/functions.js';
import { KeyMap } from '../expr/row-hash.js';
import { Numeric } from '../../sql/numeric.js';
import type { Expression } from '../../planner/expression.js';
import type { PlanOf } from '../../planner/plan.js';
import { BATCH_SIZE, PAUSE, checkDeadline, sliceUsed, type Batches, type Runtime } from './runtime.js';
import { compile, compilePredicate } from '../expr/expression.js';

const MICROS_PER_DAY = 86_400_000_000;

/** A FOR SYSTEM_TIME value as microseconds since 1970: timestamps, dates, unix seconds, text. */
export function systemTimeMicros(value: Value, type: DataType, runtime: Runtime): number {
  if (value === null) throw new SqlError(SqlState.nullValueNotAllowed, 'FOR SYSTEM_TIME moment must not be NULL');
  switch (type.name) {
    case 'timestamptz':
    case 'timestamp':
      return value as number;
    case 'date':
      return (value as number) * MICROS_PER_DAY;
    case 'int2':
    case 'int4':
    case 'float4':
    case 'float8':
      return Math.round((value as number) * 1_000_000);
    case 'int8':
      return Number(value as bigint) * 1_000_000;
    case 'numeric': {
      const n = value as Numeric;
      if (n.special !== undefined) throw new SqlError(SqlState.invalidParameterValue, 'FOR SYSTEM_TIME moment must be finite');
      return Math.round((Number(n.unscaled) / 10 ** n.scale) * 1_000_000);
    }
    default:
      return parseValue(String(value), scalar('timestamptz'), runtime.evalContext) as number;
  }
}

/** The epoch a FOR SYSTEM_TIME AS OF moment reads (evaluated once, mapped by TableAccess.epochAt). */
export function epochOf(expression: Expression, runtime: Runtime): Epoch {
  const micros = systemTimeMicros(compile(expression)([], runtime), expression.type, runtime);
  if (!Number.isFinite(micros)) throw new SqlError(SqlState.invalidParameterValue, 'FOR SYSTEM_TIME moment must be finite');
  return runtime.tables.epochAt(micros);
}

function* rowsOf(plan: PlanOf<'Scan'>, runtime: Runtime): Iterable<Row> {
  const systemTime = plan.systemTime;
  if (systemTime?.kind === 'between') {
    const from = epochOf(systemTime.from, runtime);
    const to = epochOf(systemTime.to, runtime);
    for (const version of runtime.tables.versions(plan.relation, from, to)) {
      const validTo = version.validTo === null ? null : epochToMillis(version.validTo) * 1000;
      yield [...version.row, epochToMillis(version.validFrom) * 1000, validTo];
    }
    return;
  }
  const asOf = systemTime?.kind === 'asOf' ? epochOf(systemTime.at, runtime) : undefined;
  const options = asOf === undefined ? {} : { asOf };
  if (plan.lookup !== undefined && runtime.tables.lookup !== undefined) {
    for (const key of lookupKeys(plan, runtime)) {
      const row = runtime.tables.lookup(plan.relation, key, options);
      if (row !== undefined) yield row;
    }
    return;
  }
  if (plan.indexLookup !== undefined && runtime.tables.indexKeys !== undefined && runtime.tables.lookup !== undefined) {
    const keys = indexedKeys(plan, runtime, options);
    if (keys !== undefined) {
      for (const key of keys) {
        const row = runtime.tables.lookup(plan.relation, key, options);
        if (row !== undefined) yield row;
      }
      return;
    }
  }
  yield* runtime.tables.scan(plan.relation, options);
}

const INT_RANGE: Readonly<Record<string, readonly [number, number]>> = { int2: [-32768, 32767], int4: [-2147483648, 2147483647] };

/** A key value in the key column's representation, or undefined when no stored key can equal it. */
function keyValue(value: Value, type: DataType): Value | undefined {
  if (value === null) return undefined;
  if (type.name === 'int8') return typeof value === 'bigint' ? value : BigInt(value as number);
  const range = INT_RANGE[type.name];
  if (range !== undefined) {
    const n = Number(value as number | bigint);
    return n < range[0] || n > range[1] ? undefined : n;
  }
  return value;
}

/**
 * The primary keys a secondary index gives for the scan's prefixes, deduplicated and in key order
 * (a scan's order); undefined when the index cannot answer (the table is read instead).
 */
function indexedKeys(plan: PlanOf<'Scan'>, runtime: Runtime, options: { readonly asOf?: Epoch }): Row[] | undefined {
  const relation = plan.relation;
  const { index, keys: tuples } = plan.indexLookup!;
  const prefixTypes = index.indexOn!.columns.map((column) => relation.columns[column]!.type);
  const types = relation.primaryKey.map((column) => relation.columns[column]!.type);
  const keys = new KeyMap<true>(types);
  for (const tuple of tuples) {
    const prefix: Value[] = new Array(tuple.length);
    let possible = true;
    for (let i = 0; i < tuple.length && possible; i++) {
      const value = keyValue(compile(tuple[i]!)([], runtime), prefixTypes[i]!);
      if (value === undefined) possible = false;
      else prefix[i] = value;
    }
    if (!possible) continue;
    const found = runtime.tables.indexKeys!(relation, index, prefix, options);
    if (found === undefined) return undefined;
    for (const key of found) if (keys.indexOf(key) < 0) keys.add(key, true);
  }
  return sortedKeys(keys.keys, types);
}

function sortedKeys(keys: readonly Row[], types: readonly DataType[]): Row[] {
  const sorted = keys.slice();
  sorted.sort((a, b) => {
    for (let i = 0; i < types.length; i++) {
      const order = compareValues(a[i]!, b[i]!, types[i]!);
      if (order !== 0) return order;
    }
    return 0;
  });
  return sorted;
}

/** The scan's lookup keys evaluated, converted, deduplicated and in key order (a scan's order). */
function lookupKeys(plan: PlanOf<'Scan'>, runtime: Runtime): Row[] {
  const relation = plan.relation;
  const types = relation.primaryKey.map((column) => relation.columns[column]!.type);
  const keys = new KeyMap<true>(types);
  for (const tuple of plan.lookup!) {
    const key: Value[] = new Array(tuple.length);
    let possible = true;
    for (let i = 0; i < tuple.length && possible; i++) {
      const value = keyValue(compile(tuple[i]!)([], runtime), types[i]!);
      if (value === undefined) possible = false;
      else key[i] = value;
    }
    if (possible && keys.indexOf(key) < 0) keys.add(key, true);
  }
  return sortedKeys(keys.keys, types);
}

export function* scan(plan: PlanOf<'Scan'>, runtime: Runtime): Batches {
  const projection = plan.projection;
  const width = projection.length;
  const identity = width === plan.relation.columns.length + (plan.systemTime?.kind === 'between' ? 2 : 0) && projection.every((p, i) => p === i);
  const test = plan.filter === undefined ? undefined : compilePredicate(plan.filter);
  let batch: Row[] = [];
  let read = 0;
  for (const full of rowsOf(plan, runtime)) {
    // A selective filter may read long without filling a batch: look at the clock every 1024 rows.
    if ((++read & 1023) === 0 && sliceUsed(runtime)) {
      checkDeadline(runtime);
      yield PAUSE;
    }
    let row: Row;
    if (identity) row = full;
    else {
      row = new Array(width);
      for (let i = 0; i < width; i++) row[i] = full[projection[i]!]!;
    }
    if (test !== undefined && !test(row, runtime)) continue;
    batch.push(row);
    if (batch.length >= BATCH_SIZE) {
      checkDeadline(runtime);
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
