// Window functions: materializes the input, then per call partitions the rows (hash on the
// PARTITION BY values), orders each partition (stable), finds peer groups (rows equal on ORDER
// BY) and computes the call per row: ranking functions, lag/lead, first/last/nth_value and
// aggregates over the frame (ROWS offsets; RANGE with UNBOUNDED / CURRENT ROW, peers included,
// or value offsets over one ORDER BY key).
// Frames starting at UNBOUNDED PRECEDING are accumulated incrementally. Output: the input row
// followed by one value per call, rows in input order.

import type { Row, Value } from '../../sql/value.js';
import type { AggregateCall, AggregateName, PlanOf, RangeOffset, WindowCall } from '../../planner/plan.js';
import { compareValues } from '../../sql/functions.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { BATCH_SIZE, type Batches, type Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';
import { gather } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';
import { keyComparator } from './sort.js';
import { compileCall, feed, newAccumulators } from './aggregate.js';

function partitions(rows: readonly Row[], call: WindowCall, runtime: Runtime): number[][] {
  if (call.partitionBy.length === 0) return [rows.map((_, i) => i)];
  const evaluators = call.partitionBy.map(compile);
  const groups = new KeyMap<number[]>(call.partitionBy.map((e) => e.type));
  for (let i = 0; i < rows.length; i++) {
    const key = evaluators.map((evaluate) => evaluate(rows[i]!, runtime));
    const index = groups.indexOf(key);
    if (index < 0) groups.add(key, [i]);
    else groups.values[index]!.push(i);
  }
  return groups.values;
}

/**
 * RANGE offset frames over the single ORDER BY key: the frame of row p holds the rows whose key
 * lies within the offset of p's key, found by binary search in the sorted partition (NULL keys
 * sort at one end; a row with a NULL key frames its NULL peers). Descending order flips which
 * way PRECEDING goes.
 */
function rangeBounds(call: WindowCall, sortedKeys: readonly Value[][], firstPeer: readonly number[], lastPeer: readonly number[], runtime: Runtime) {
  const key = call.orderBy[0];
  const n = sortedKeys.length;
  const sign = key?.descending ? -1 : 1;
  const type = key?.expression.type;
  // Non-null keys occupy positions [low, high).
  let low = 0;
  let high = n;
  while (low < n && sortedKeys[low]![0] === null) low++;
  while (high > low && sortedKeys[high - 1]![0] === null) high--;
  const order = (a: Value, b: Value) => sign * compareValues(a, b, type!);
  const target = (p: number, bound: RangeOffset, direction: 'preceding' | 'following'): Value => {
    const value = sortedKeys[p]![0]!;
    const offset = compile(bound.value)([], runtime);
    if (offset === null) throw new SqlError(SqlState.nullValueNotAllowed, 'frame offset must not be null');
    // Moving "back" in sort order subtracts for ascending keys and adds for descending ones.
    const subtract = (direction === 'preceding') === (sign > 0);
    return (subtract ? bound.minus : bound.plus).impl([value, offset], runtime.evalContext);
  };
  const firstAtLeast = (value: Value): number => {
    let lo = low;
    let hi = high;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (order(sortedKeys[mid]![0]!, value) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const lastAtMost = (value: Value): number => {
    let lo = low;
    let hi = high;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (order(sortedKeys[mid]![0]!, value) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  };
  return {
    start(p: number, direction: 'preceding' | 'following'): number {
      if (sortedKeys[p]![0] === null) return firstPeer[p]!;
      return firstAtLeast(target(p, call.frame.start.range!, direction));
    },
    end(p: number, direction: 'preceding' | 'following'): number {
      if (sortedKeys[p]![0] === null) return lastPeer[p]!;
      return lastAtMost(target(p, call.frame.end.range!, direction));
    },
  };
}

function computeCall(rows: readonly Row[], call: WindowCall, runtime: Runtime, results: Value[]): void {
  const orderEvaluators = call.orderBy.map((k) => compile(k.expression));
  const compare = keyComparator(call.orderBy);
  const args = call.args.map(compile);
  const isAggregate = !['row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead', 'first_value', 'last_value', 'nth_value'].includes(call.name);
  const aggregateCall: AggregateCall | undefined = isAggregate
    ? { name: call.name as AggregateName, args: call.args, distinct: false, ...(call.filter ? { filter: call.filter } : {}), type: call.type }
    : undefined;
  const compiledAggregate = aggregateCall === undefined ? undefined : [compileCall(aggregateCall)];
  for (const partition of partitions(rows, call, runtime)) {
    const keys = partition.map((i) => orderEvaluators.map((evaluate) => evaluate(rows[i]!, runtime)));
    const order = partition.map((_, p) => p).sort((a, b) => compare(keys[a]!, keys[b]!) || a - b);
    const sorted = order.map((p) => partition[p]!);
    const sortedKeys = order.map((p) => keys[p]!);
    const n = sorted.length;
    // Peer groups: firstPeer[p] / lastPeer[p] positions in sorted order.
    const firstPeer = new Array<number>(n);
    const lastPeer = new Array<number>(n);
    let groupStart = 0;
    for (let p = 0; p < n; p++) {
      if (p > 0 && compare(sortedKeys[p - 1]!, sortedKeys[p]!) !== 0) groupStart = p;
      firstPeer[p] = groupStart;
    }
    let groupEnd = n - 1;
    for (let p = n - 1; p >= 0; p--) {
      if (p < n - 1 && compare(sortedKeys[p]!, sortedKeys[p + 1]!) !== 0) groupEnd = p;
      lastPeer[p] = groupEnd;
    }
    const range = rangeBounds(call, sortedKeys, firstPeer, lastPeer, runtime);
    const frameStart = (p: number): number => {
      const s = call.frame.start;
      switch (s.kind) {
        case 'unboundedPreceding':
          return 0;
        case 'currentRow':
          return call.frame.mode === 'rows' ? p : firstPeer[p]!;
        case 'preceding':
          return s.range !== undefined ? range.start(p, 'preceding') : Math.max(0, p - s.offset!);
        case 'following':
          return s.range !== undefined ? range.start(p, 'following') : p + s.offset!;
      }
    };
    const frameEnd = (p: number): number => {
      const e = call.frame.end;
      switch (e.kind) {
        case 'unboundedFollowing':
          return n - 1;
        case 'currentRow':
          return call.frame.mode === 'rows' ? p : lastPeer[p]!;
        case 'preceding':
          return e.range !== undefined ? range.end(p, 'preceding') : p - e.offset!;
        case 'following':
          return e.range !== undefined ? range.end(p, 'following') : Math.min(n - 1, p + e.offset!);
      }
    };
    const argument = (index: number, position: number): Value => args[index]!(rows[sorted[position]!]!, runtime);
    if (compiledAggregate !== undefined) {
      const incremental = call.frame.start.kind === 'unboundedPreceding';
      let accumulators = newAccumulators(compiledAggregate, runtime);
      let fed = -1;
      for (let p = 0; p < n; p++) {
        const start = frameStart(p);
        const end = Math.min(frameEnd(p), n - 1);
        if (!incremental) {
          accumulators = newAccumulators(compiledAggregate, runtime);
          for (let q = start; q <= end; q++) feed(compiledAggregate, accumulators, rows[sorted[q]!]!, runtime);
        } else {
          while (fed < end) feed(compiledAggregate, accumulators, rows[sorted[++fed]!]!, runtime);
        }
        results[sorted[p]!] = accumulators[0]!.result();
      }
      continue;
    }
    let dense = 0;
    for (let p = 0; p < n; p++) {
      const rowIndex = sorted[p]!;
      if (firstPeer[p] === p) dense++;
      let value: Value;
      switch (call.name) {
        case 'row_number':
          value = BigInt(p + 1);
          break;
        case 'rank':
          value = BigInt(firstPeer[p]! + 1);
          break;
        case 'dense_rank':
          value = BigInt(dense);
          break;
        case 'percent_rank':
          value = n <= 1 ? 0 : firstPeer[p]! / (n - 1);
          break;
        case 'cume_dist':
          value = (lastPeer[p]! + 1) / n;
          break;
        case 'ntile': {
          const buckets = args[0]!(rows[rowIndex]!, runtime) as number | null;
          if (buckets === null) {
            value = null;
            break;
          }
          if (buckets <= 0) throw new SqlError(SqlState.invalidParameterValue, 'argument of ntile must be greater than zero');
          const per = Math.floor(n / buckets);
          const extra = n % buckets;
          const boundary = extra * (per + 1);
          value = p < boundary ? Math.floor(p / (per + 1)) + 1 : extra + Math.floor((p - boundary) / Math.max(per, 1)) + 1;
          break;
        }
        case 'lag':
        case 'lead': {
          const offset = args.length > 1 ? (argument(1, p) as number | null) : 1;
          if (offset === null) {
            value = null;
            break;
          }
          const target = call.name === 'lag' ? p - offset : p + offset;
          value = target >= 0 && target < n ? argument(0, target) : args.length > 2 ? argument(2, p) : null;
          break;
        }
        case 'first_value':
        case 'last_value':
        case 'nth_value': {
          const start = frameStart(p);
          const end = Math.min(frameEnd(p), n - 1);
          if (start > end) {
            value = null;
            break;
          }
          if (call.name === 'first_value') value = argument(0, start);
          else if (call.name === 'last_value') value = argument(0, end);
          else {
            const nth = argument(1, p) as number | null;
            if (nth !== null && nth <= 0) throw new SqlError(SqlState.invalidParameterValue, 'argument of nth_value must be greater than zero');
            value = nth === null || start + nth - 1 > end ? null : argument(0, start + nth - 1);
          }
          break;
        }
        default:
          value = null;
      }
      results[rowIndex] = value;
    }
  }
}

export function* window(plan: PlanOf<'Window'>, runtime: Runtime): Batches {
  const rows = yield* gather(plan.input, runtime);
  const columns = plan.calls.map((call) => {
    const results: Value[] = new Array(rows.length).fill(null);
    computeCall(rows, call, runtime, results);
    return results;
  });
  // PostgreSQL emits rows in the order its last window sorted them: partition keys, then ORDER BY.
  const last = plan.calls[plan.calls.length - 1]!;
  const outputKeys = [...last.partitionBy.map((expression) => ({ expression, descending: false, nullsFirst: false })), ...last.orderBy];
  let order = rows.map((_, i) => i);
  if (outputKeys.length > 0) {
    const evaluators = outputKeys.map((k) => compile(k.expression));
    const keys = rows.map((row) => evaluators.map((evaluate) => evaluate(row, runtime)));
    const compare = keyComparator(outputKeys);
    order = order.sort((a, b) => compare(keys[a]!, keys[b]!) || a - b);
  }
  let out: Row[] = [];
  for (const i of order) {
    const row: Row = [...rows[i]!];
    for (const column of columns) row.push(column[i]!);
    out.push(row);
    if (out.length >= BATCH_SIZE) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}
