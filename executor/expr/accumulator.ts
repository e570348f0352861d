// Aggregate accumulators: one object per group and aggregate call, fed the call's evaluated
// arguments row by row. Result types follow PostgreSQL (the binder chose them): count → int8,
// sum(int2/int4) → int8, sum(int8)/avg(integers)/avg(numeric) → numeric through the numeric
// library's exact + and /, float sums in float arithmetic, min/max by compareValues.

import type { Value, SqlArray } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { type as scalar } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { Numeric } from '../../sql/numeric.js';
import { compareValues, resolveOperator, type EvalContext, type ScalarImpl } from '../../sql/functions.js';
import type { AggregateCall, AggregateName } from '../../planner/plan.js';
import { KeyMap } from './row-hash.js';

export interface Accumulator {
  add(first: Value, second: Value): void;
  result(): Value;
}

const operatorCache = new Map<string, ScalarImpl>();

function operatorImpl(name: string, left: DataType, right: DataType): ScalarImpl {
  const key = `${name}/${left.name}/${right.name}`;
  let impl = operatorCache.get(key);
  if (impl === undefined) {
    const resolved = resolveOperator(name, left, right);
    if (resolved === undefined) throw new SqlError(SqlState.internalError, `operator ${left.name} ${name} ${right.name} is missing`);
    impl = resolved.fn.impl;
    operatorCache.set(key, impl);
  }
  return impl;
}

const NUMERIC = scalar('numeric');
const INTERVAL = scalar('interval');
const FLOAT8 = scalar('float8');
const TWO_POW_52 = 2 ** 52;

class Count implements Accumulator {
  count = 0;
  constructor(private readonly star: boolean) {}
  add(value: Value): void {
    if (this.star || value !== null) this.count++;
  }
  result(): Value {
    return BigInt(this.count);
  }
}

/** sum of int2/int4 (→ int8) and int8 (→ numeric): exact integers, small ones as numbers. */
class IntegerSum implements Accumulator {
  small = 0;
  big = 0n;
  seen = false;
  constructor(private readonly toNumeric: boolean) {}
  add(value: Value): void {
    if (value === null) return;
    this.seen = true;
    if (typeof value === 'bigint') this.big += value;
    else {
      this.small += value as number;
      if (Math.abs(this.small) > TWO_POW_52) {
        this.big += BigInt(this.small);
        this.small = 0;
      }
    }
  }
  total(): bigint {
    return this.big + BigInt(this.small);
  }
  result(): Value {
    if (!this.seen) return null;
    const total = this.total();
    if (!this.toNumeric && (total > 9223372036854775807n || total < -9223372036854775808n)) throw new SqlError(SqlState.numericValueOutOfRange, 'bigint out of range');
    return this.toNumeric ? new Numeric(total, 0) : total;
  }
}

class LibrarySum implements Accumulator {
  sum: Value = null;
  count = 0;
  constructor(private readonly type: DataType, private readonly context: EvalContext) {}
  add(value: Value): void {
    if (value === null) return;
    this.count++;
    this.sum = this.sum === null ? value : operatorImpl('+', this.type, this.type)([this.sum, value], this.context);
  }
  result(): Value {
    return this.sum;
  }
}

class FloatSum implements Accumulator {
  sum = 0;
  count = 0;
  constructor(private readonly single: boolean) {}
  add(value: Value): void {
    if (value === null) return;
    this.count++;
    this.sum = this.single ? Math.fround(this.sum + (value as number)) : this.sum + (value as number);
  }
  result(): Value {
    return this.count === 0 ? null : this.sum;
  }
}

class Average implements Accumulator {
  private readonly inner: IntegerSum | LibrarySum | FloatSum;
  private count = 0;
  constructor(private readonly argumentType: DataType, private readonly context: EvalContext) {
    const name = argumentType.name;
    if (name === 'int2' || name === 'int4' || name === 'int8') this.inner = new IntegerSum(true);
    else if (name === 'float4' || name === 'float8') this.inner = new FloatSum(false);
    else this.inner = new LibrarySum(argumentType, context);
  }
  add(value: Value): void {
    if (value === null) return;
    this.count++;
    (this.inner as Accumulator).add(value, null);
  }
  result(): Value {
    if (this.count === 0) return null;
    const sum = this.inner.result();
    const name = this.argumentType.name;
    if (name === 'float4' || name === 'float8') return (sum as number) / this.count;
    if (name === 'interval') return operatorImpl('/', INTERVAL, FLOAT8)([sum, this.count], this.context);
    return operatorImpl('/', NUMERIC, NUMERIC)([sum, new Numeric(BigInt(this.count), 0)], this.context);
  }
}

class Extreme implements Accumulator {
  best: Value = null;
  constructor(private readonly type: DataType, private readonly sign: number) {}
  add(value: Value): void {
    if (value === null) return;
    if (this.best === null || this.sign * compareValues(value, this.best, this.type) > 0) this.best = value;
  }
  result(): Value {
    return this.best;
  }
}

class BooleanFold implements Accumulator {
  state: boolean | null = null;
  constructor(private readonly and: boolean) {}
  add(value: Value): void {
    if (value === null) return;
    this.state = this.state === null ? (value as boolean) : this.and ? this.state && (value as boolean) : this.state || (value as boolean);
  }
  result(): Value {
    return this.state;
  }
}

class StringAggregate implements Accumulator {
  parts: string[] = [];
  bytes: Uint8Array[] = [];
  seen = false;
  constructor(private readonly binary: boolean) {}
  add(value: Value, delimiter: Value): void {
    if (value === null) return;
    if (this.binary) {
      if (this.seen && delimiter !== null) this.bytes.push(delimiter as Uint8Array);
      this.bytes.push(value as Uint8Array);
    } else {
      if (this.seen && delimiter !== null) this.parts.push(delimiter as string);
      this.parts.push(value as string);
    }
    this.seen = true;
  }
  result(): Value {
    if (!this.seen) return null;
    if (!this.binary) return this.parts.join('');
    const total = this.bytes.reduce((n, b) => n + b.length, 0);
    const out = new Uint8Array(total);
    let offset = 0;
    for (const b of this.bytes) {
      out.set(b, offset);
      offset += b.length;
    }
    return out;
  }
}

class ArrayAggregate implements Accumulator {
  elements: Value[] = [];
  add(value: Value): void {
    this.elements.push(value);
  }
  result(): Value {
    return this.elements.length === 0 ? null : ({ kind: 'array', elements: [...this.elements] } satisfies SqlArray);
  }
}

/** DISTINCT: feeds each distinct non-null argument value once. */
class DistinctAccumulator implements Accumulator {
  private readonly seen: KeyMap<true>;
  constructor(private readonly inner: Accumulator, types: readonly DataType[]) {
    this.seen = new KeyMap(types);
  }
  add(first: Value, second: Value): void {
    if (first === null) return;
    const key = [first, second];
    if (this.seen.indexOf(key) >= 0) return;
    this.seen.add(key, true);
    this.inner.add(first, second);
  }
  result(): Value {
    return this.inner.result();
  }
}

export function createAccumulator(call: AggregateCall, context: EvalContext): Accumulator {
  const accumulator = baseAccumulator(call.name, call, context);
  if (!call.distinct) return accumulator;
  return new DistinctAccumulator(accumulator, [call.args[0]?.type ?? scalar('int4'), call.args[1]?.type ?? scalar('text')]);
}

function baseAccumulator(name: AggregateName, call: AggregateCall, context: EvalContext): Accumulator {
  const argumentType = call.args[0]?.type;
  switch (name) {
    case 'count':
      return new Count(call.args.length === 0);
    case 'sum':
      switch (argumentType!.name) {
        case 'int2':
        case 'int4':
          return new IntegerSum(false);
        case 'int8':
          return new IntegerSum(true);
        case 'float4':
          return new FloatSum(true);
        case 'float8':
          return new FloatSum(false);
        default:
          return new LibrarySum(argumentType!, context);
      }
    case 'avg':
      return new Average(argumentType!, context);
    case 'min':
      return new Extreme(argumentType!, -1);
    case 'max':
      return new Extreme(argumentType!, 1);
    case 'bool_and':
    case 'every':
      return new BooleanFold(true);
    case 'bool_or':
      return new BooleanFold(false);
    case 'string_agg':
      return new StringAggregate(argumentType!.name === 'bytea');
    case 'array_agg':
      return new ArrayAggregate();
  }
}
