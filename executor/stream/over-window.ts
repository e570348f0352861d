// StreamAppendOnlyOverWindow: an over-window whose calls all run forward (row_number, rank,
// dense_rank, lag by one row, count / sum / min / max from UNBOUNDED PRECEDING to CURRENT ROW; a
// shared PARTITION BY and ORDER BY) over an input that mostly inserts (planner/stream/
// incrementalize.ts plans it from plan version 8). Rows of a partition that sort after all its
// stored rows leave every stored row's output as it was, so they are computed from the partition's
// summary alone, without reading its rows:
//
//   state: the keyed recompute's input table (`partition ++ row ++ count`), and per partition one
//          summary row (`partition ++ last row ++ row count ++ peer groups ++ value of each call
//          at the last row`), the last row being the last in the recompute's order
//   for each changed partition:
//     read its summary (a point read)
//     every change an insertion that sorts after the last row (see ties below) ->
//       order the new rows (ORDER BY, then the state-key encoding, as the recompute orders ties)
//       and compute their outputs on from the summary: row_number = count + 1, rank = count of
//       rows before the peer group + 1, dense_rank = groups + 1, lag = the argument on the previous
//       row (the last stored one for the first new row), each aggregate folded on from its value
//       (a RANGE frame takes the whole peer group, a ROWS frame one row at a time); emit them,
//       store the new rows and the new summary
//     else (a deletion, a row before the last row, an error on the way, no valid summary) ->
//       the keyed recompute of the partition (keyed-operator.ts), whose output's last row gives
//       the new summary (a failed template: a summary marked invalid, count -1)
//
// Ties: a new row equal to the last row on ORDER BY joins its peer group. It sorts after the last
// row when its state-key encoding is not below the last row's (the recompute orders peers by it),
// and then the stored rows keep their row_number, lag and ROWS values; their RANGE values stay
// only when folding the new peers leaves each RANGE aggregate's value as it was (a sum of 0, a
// count of NULLs, a min above the minimum). Anything else tied (and any tie under rank() or
// dense_rank()) goes to the recompute, so the outputs are exactly the recompute's, with values
// folded by the same arithmetic as executor/expr/accumulator.ts. A new row equal to the last one
// reads its count in the input table (the only stored row it can equal).

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { Numeric } from '../../sql/numeric.js';
import { compareValues, resolveOperator, type ScalarImpl } from '../../sql/functions.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { WindowCall } from '../../planner/plan.js';
import type { KeyedOperator } from '../../planner/stream/stream-plan.js';
import type { StateTable } from '../../storage/state-table.js';
import { ByteWriter } from '../../storage/byte-writer.js';
import { encodeKey } from '../../storage/memcomparable.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { KeyMap, keysEqual } from '../expr/row-hash.js';
import type { Runtime } from '../batch/runtime.js';
import { keyComparator } from '../batch/sort.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import { KeyedOperatorNode, type KeyGroupChanges } from './keyed-operator.js';
import type { StreamContext } from './stream-context.js';

const INT8_MAX = 9223372036854775807n;
const INT8_MIN = -9223372036854775808n;

/** How each call computes a row's value from the rows before it. */
type CallKind = 'row_number' | 'rank' | 'dense_rank' | 'lag' | 'count' | 'countStar' | 'intSum' | 'int8Sum' | 'floatSum' | 'float4Sum' | 'librarySum' | 'min' | 'max';

interface ForwardCall {
  readonly kind: CallKind;
  readonly argument: Evaluator | undefined;
  /** lag's default (third argument), over the current row. */
  readonly fallback: Evaluator | undefined;
  /** An aggregate over a RANGE frame: peers share the value after the whole peer group. */
  readonly range: boolean;
  readonly type: DataType | undefined;
  readonly plus: ScalarImpl | undefined;
}

/** The recompute is needed for this partition. */
class Recompute extends Error {}

/** A new row of a partition on the fast path: the row, its ORDER BY values, its encoding once needed. */
interface Added {
  readonly row: Row;
  readonly order: Value[];
  encoded: Buffer | undefined;
}

export class StreamAppendOnlyOverWindowNode extends KeyedOperatorNode {
  private readonly summaries: StateTable;
  private readonly calls: readonly ForwardCall[];
  private readonly orderEvaluators: readonly Evaluator[];
  private readonly compareOrder: (a: readonly Value[], b: readonly Value[]) => number;
  private readonly rowTypes: readonly DataType[];
  private readonly countsGroups: boolean;
  /** rank() or dense_rank(): a row tied with the last row's ORDER BY goes to the recompute. */
  private readonly ranks: boolean;
  private readonly writer = new ByteWriter();
  /** The summary rows to write after every partition was read (the recompute's and the fast path's). */
  private summaryWrites: { key: Value[]; row: Row | undefined }[] = [];

  constructor(plan: KeyedOperator, context: StreamContext) {
    super(plan, context);
    const template = plan.template;
    if (template.kind !== 'Window') throw new SqlError(SqlState.internalError, 'StreamAppendOnlyOverWindow without its window');
    this.summaries = context.stateTable(plan.stateTables[1]!);
    this.rowTypes = this.inputTypes[0]!;
    const orderBy = template.calls[0]!.orderBy;
    this.orderEvaluators = orderBy.map((key) => compile(key.expression));
    this.compareOrder = keyComparator(orderBy);
    this.calls = template.calls.map((call) => forwardCall(call));
    this.countsGroups = this.calls.some((call) => call.kind === 'dense_rank');
    this.ranks = this.calls.some((call) => call.kind === 'rank' || call.kind === 'dense_rank');
  }

  override applyAll(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch {
    const changes = changesPerSlot[0];
    const out = emptyChanges();
    if (changes === undefined || changes.rows.length === 0) return out;
    const groups = new KeyMap<KeyGroupChanges[]>(this.keyTypes);
    this.groupByKey(0, changes, groups);
    const writes: Row[][] = [[]];
    this.summaryWrites = [];
    for (let g = 0; g < groups.size; g++) {
      const key = groups.keys[g]!;
      const group = groups.values[g]!;
      if (!this.appendAfterLast(key, group[0]!, out, writes[0]!)) {
        const changed = this.recomputeKey(key, group, writes);
        for (let i = 0; i < changed.rows.length; i++) {
          out.rows.push(changed.rows[i]!);
          out.signs.push(changed.signs[i]!);
        }
      }
    }
    this.write(writes);
    for (const { key, row } of this.summaryWrites) {
      if (row !== undefined) this.summaries.insert(row);
      else this.summaries.delete([...key, ...new Array<Value>(this.rowTypes.length + 2 + this.calls.length).fill(null)]);
    }
    this.summaryWrites = [];
    return out;
  }

  /** The summary of a recomputed partition: from the last row of its window's output. */
  protected override recomputed(key: Value[], after: Row[] | undefined): void {
    const width = this.rowTypes.length;
    if (after === undefined) {
      // A failed template: the next change of the partition recomputes it again.
      this.summaryWrites.push({ key, row: [...key, ...new Array<Value>(width).fill(null), -1n, 0n, ...this.calls.map(() => null)] });
      return;
    }
    if (after.length === 0) {
      this.summaryWrites.push({ key, row: undefined });
      return;
    }
    // The window outputs a partition's rows in its order, ties in input (state) order: the last
    // output row is the last row.
    const last = after[after.length - 1]!;
    let groups = 0;
    if (this.countsGroups) {
      let previous: Value[] | undefined;
      for (const row of after) {
        const order = this.orderOf(row);
        if (previous === undefined || this.compareOrder(previous, order) !== 0) groups++;
        previous = order;
      }
    }
    const values = this.calls.map((call, c) => (isAggregate(call.kind) ? last[width + c]! : null));
    this.summaryWrites.push({ key, row: [...key, ...last.slice(0, width), BigInt(after.length), BigInt(groups), ...values] });
  }

  /**
   * The fast path for one partition: true when its changes were all insertions after its last row
   * and their outputs were emitted and their state collected; false (nothing emitted) otherwise.
   */
  private appendAfterLast(key: Value[], changes: KeyGroupChanges, out: ChangeBatch, rowWrites: Row[]): boolean {
    for (let i = 0; i < changes.signs.length; i++) if (changes.signs[i]! <= 0) return false;
    const width = this.rowTypes.length;
    const keyWidth = key.length;
    const summary = this.summaries.get(key);
    let count = 0n;
    let groups = 0n;
    let last: Row | undefined;
    const values: Value[] = this.calls.map((call) => (call.kind === 'count' || call.kind === 'countStar' ? 0n : null));
    if (summary !== undefined) {
      count = summary[keyWidth + width] as bigint;
      if (count < 0n) return false;
      groups = summary[keyWidth + width + 1] as bigint;
      last = summary.slice(keyWidth, keyWidth + width);
      for (let c = 0; c < this.calls.length; c++) values[c] = summary[keyWidth + width + 2 + c]!;
    }
    try {
      const lastOrder = last === undefined ? undefined : this.orderOf(last);
      const lastAdded: Added | undefined = last === undefined ? undefined : { row: last, order: lastOrder!, encoded: undefined };
      const added: Added[] = [];
      let tied = false;
      for (let i = 0; i < changes.rows.length; i++) {
        const row = changes.rows[i]!;
        const order = this.orderOf(row);
        const entry: Added = { row, order, encoded: undefined };
        if (lastAdded !== undefined) {
          const versus = this.compareOrder(order, lastAdded.order);
          if (versus < 0) return false;
          // A peer of the last row: after it in the recompute's order (by encoding), so the stored
          // rows keep their row_number, lag and ROWS values; ranks would need the peer group's start.
          if (versus === 0) {
            if (this.ranks || Buffer.compare(this.encoding(entry), this.encoding(lastAdded)) < 0) return false;
            tied = true;
          }
        }
        for (let n = changes.signs[i]!; n > 0; n--) added.push(entry);
      }
      if (added.length > 1) added.sort((a, b) => this.compareOrder(a.order, b.order) || Buffer.compare(this.encoding(a), this.encoding(b)));
      const outputs: Row[] = [];
      const calls = this.calls;
      const runtime = this.context.runtime;
      const peerValues: Value[] = new Array(calls.length);
      let previous = last;
      for (let start = 0; start < added.length; ) {
        let end = start + 1;
        while (end < added.length && this.compareOrder(added[start]!.order, added[end]!.order) === 0) end++;
        const rank = count + 1n;
        // The first new rows may continue the last row's peer group (`tied`).
        const continues = tied && start === 0;
        if (!continues) groups++;
        for (let c = 0; c < calls.length; c++) {
          const call = calls[c]!;
          if (!call.range) continue;
          let value: Value = values[c]!;
          for (let p = start; p < end; p++) value = fold(call, value, added[p]!.row, runtime);
          // The stored peers' RANGE values would change with the new peers: the recompute says how.
          if (continues && !sameValue(value, values[c]!)) throw new Recompute();
          values[c] = value;
          peerValues[c] = checked(call, value);
        }
        for (let p = start; p < end; p++) {
          const row = added[p]!.row;
          const output: Row = row.slice();
          for (let c = 0; c < calls.length; c++) {
            const call = calls[c]!;
            switch (call.kind) {
              case 'row_number':
                output.push(count + 1n);
                break;
              case 'rank':
                output.push(rank);
                break;
              case 'dense_rank':
                output.push(groups);
                break;
              case 'lag':
                output.push(previous !== undefined ? call.argument!(previous, runtime) : call.fallback !== undefined ? call.fallback(row, runtime) : null);
                break;
              default:
                if (call.range) output.push(peerValues[c]!);
                else output.push(checked(call, (values[c] = fold(call, values[c]!, row, runtime))));
            }
          }
          outputs.push(output);
          previous = row;
          count++;
        }
        start = end;
      }
      for (const output of outputs) {
        out.rows.push(output);
        out.signs.push(1);
      }
      // The new rows are after every stored row, so none is stored yet but copies of the last
      // row (read for their count): each distinct row once, with its count.
      for (let p = 0; p < added.length; ) {
        let q = p + 1;
        while (q < added.length && (added[q]!.row === added[p]!.row || (this.compareOrder(added[q]!.order, added[p]!.order) === 0 && keysEqual(added[q]!.row, added[p]!.row, this.rowTypes)))) q++;
        let stored = 0n;
        if (p === 0 && tied && keysEqual(added[0]!.row, last!, this.rowTypes)) stored = (this.tables[0]!.get([...key, ...last!])?.[keyWidth + width] as bigint | undefined) ?? 0n;
        rowWrites.push([...key, ...added[p]!.row, stored + BigInt(q - p)]);
        p = q;
      }
      const lastRow = added[added.length - 1]!.row;
      this.summaryWrites.push({ key, row: [...key, ...lastRow, count, groups, ...values.map((value, c) => (isAggregate(calls[c]!.kind) ? value : null))] });
      return true;
    } catch {
      // An error on the way (an argument failing, a sum out of range): the recompute decides, and
      // records the error, as the batch window does.
      return false;
    }
  }

  private orderOf(row: Row): Value[] {
    const runtime = this.context.runtime;
    const order: Value[] = new Array(this.orderEvaluators.length);
    for (let k = 0; k < order.length; k++) order[k] = this.orderEvaluators[k]!(row, runtime);
    return order;
  }

  private encoding(added: Added): Buffer {
    if (added.encoded === undefined) {
      this.writer.reset();
      encodeKey(this.writer, added.row, this.rowTypes);
      added.encoded = this.writer.copy();
    }
    return added.encoded;
  }
}

function isAggregate(kind: CallKind): boolean {
  return kind !== 'row_number' && kind !== 'rank' && kind !== 'dense_rank' && kind !== 'lag';
}

function forwardCall(call: WindowCall): ForwardCall {
  const argument = call.args[0] === undefined ? undefined : compile(call.args[0]);
  const type = call.args[0]?.type;
  const range = call.frame.mode === 'range';
  const base = { argument, fallback: undefined, range: false, type, plus: undefined };
  switch (call.name) {
    case 'row_number':
    case 'rank':
    case 'dense_rank':
      return { ...base, kind: call.name };
    case 'lag':
      return { ...base, kind: 'lag', fallback: call.args[2] === undefined ? undefined : compile(call.args[2]) };
    case 'count':
      return { ...base, kind: call.args.length === 0 ? 'countStar' : 'count', range };
    case 'min':
    case 'max':
      return { ...base, kind: call.name, range };
    case 'sum':
      switch (type?.name) {
        case 'int2':
        case 'int4':
          return { ...base, kind: 'intSum', range };
        case 'int8':
          return { ...base, kind: 'int8Sum', range };
        case 'float4':
          return { ...base, kind: 'float4Sum', range };
        case 'float8':
          return { ...base, kind: 'floatSum', range };
        default: {
          const resolved = resolveOperator('+', type!, type!);
          if (resolved === undefined) throw new SqlError(SqlState.internalError, `operator ${type!.name} + ${type!.name} is missing`);
          return { ...base, kind: 'librarySum', range, plus: resolved.fn.impl };
        }
      }
    default:
      throw new SqlError(SqlState.internalError, `StreamAppendOnlyOverWindow cannot compute ${call.name}`);
  }
}

/** The same value to the letter (a numeric's scale too): an output that would not change. */
function sameValue(a: Value, b: Value): boolean {
  if (a === b) return true;
  return a instanceof Numeric && b instanceof Numeric && a.unscaled === b.unscaled && a.scale === b.scale && a.special === b.special;
}

/** An aggregate's value as a row's output: an int8 sum out of range fails, as IntegerSum's result. */
function checked(call: ForwardCall, value: Value): Value {
  if (call.kind === 'intSum' && value !== null && ((value as bigint) > INT8_MAX || (value as bigint) < INT8_MIN)) throw new Recompute();
  return value;
}

/**
 * An aggregate's value after one more row, from its value at the row before: the arithmetic of
 * executor/expr/accumulator.ts (Count, IntegerSum, FloatSum, LibrarySum, Extreme), whose result at
 * every row is its whole state.
 */
function fold(call: ForwardCall, value: Value, row: Row, runtime: Runtime): Value {
  if (call.kind === 'countStar') return (value as bigint) + 1n;
  const x = call.argument!(row, runtime);
  if (x === null) return value;
  switch (call.kind) {
    case 'count':
      return (value as bigint) + 1n;
    case 'intSum':
      return (value === null ? 0n : (value as bigint)) + BigInt(x as number);
    case 'int8Sum':
      return new Numeric((value === null ? 0n : (value as Numeric).unscaled) + (x as bigint), 0);
    case 'floatSum':
      return (value === null ? 0 : (value as number)) + (x as number);
    case 'float4Sum':
      return Math.fround((value === null ? 0 : (value as number)) + (x as number));
    case 'librarySum':
      return value === null ? x : call.plus!([value, x], runtime.evalContext);
    case 'min':
      return value === null || compareValues(x, value, call.type!) < 0 ? x : value;
    case 'max':
      return value === null || compareValues(x, value, call.type!) > 0 ? x : value;
    default:
      return value;
  }
}
