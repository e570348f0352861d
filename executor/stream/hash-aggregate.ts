// StreamHashAggregate: the incremental hash aggregate. Per group one state row
// (`key ++ row count ++ accumulators`, layout in planner/stream/stream-plan.ts RetractableCall),
// updated from the changes in O(changes): a change of one row reads one state row and writes it
// back, whatever the size of the group. min / max and DISTINCT keep a value table per argument
// (`key ++ value ++ count`): deleting the current minimum reads the table's next value (one short
// range read), DISTINCT accumulates a value when its count goes 0 -> 1 and retracts it at 1 -> 0.
//
//   for each changed group k (reads first, writes after every group: a read after a write makes a
//   state table re-sort its buffered keys):
//     state = the group's state row (none: the empty group)
//     old   = output(state)
//     fold every change into state (sign +1 / -1), value deltas into the value tables
//     new   = output(state)  (none when the group is empty and has a key)
//     emit -old +new unless equal
//
// Over an append-only input (`appendOnly`: a source without a primary key, through filters,
// projections, watermark filters, LATERAL and inner joins of such inputs) no row is ever deleted, so min / max need no
// value table: the state row's current value and the inserted values decide (RisingWave's
// append-only aggregation). Those calls neither read nor write their value table; DISTINCT calls
// sharing it still do. A deletion reaching such an aggregate is an internal error.
//
// Results equal the batch accumulators (executor/expr/accumulator.ts) exactly: integer sums are
// exact bigints (sum(int2/int4) is int8 with the range check, sum(int8) numeric), numeric sums keep
// the count of each scale present (the result's scale is the largest present, as adding them would
// give) and of NaN / +inf / -inf, avg divides with the batch's numeric `/`. An error inside the
// view (a failing argument, a sum out of the int8 range) makes that value NULL and is recorded in
// view_errors; it never stops the view.
//
// Per-epoch combine: inside an epoch a source pushes its rows in chunks (StreamManager.push), and a
// group touched in n chunks would emit n retractions and n inserts downstream. While the dataflow
// holds (`setHolding(true)`, Dataflow.pushChunk) the aggregate keeps the groups touched since its
// last output (`dirty`: each group's state, its stored row and its output as last emitted) and
// emits nothing; `seal()` (at the barrier, Dataflow.seal) emits each dirty group's net change once
// and writes its state row once. When the dirty set reaches `aggregateCombine.maxGroups` groups it
// is emitted at once (memory stays bounded; a chunk boundary is a consistent state, so an early
// output is as correct as one at the barrier). Not holding (pushAll, push, a backfill, the views
// that take the whole epoch), every batch's changes are emitted at its end.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { type as scalar } from '../../sql/types.js';
import { Numeric } from '../../sql/numeric.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { compareValues, resolveOperator, type ScalarImpl } from '../../sql/functions.js';
import type { StateTable } from '../../storage/state-table.js';
import type { RetractableCall, StreamPlan } from '../../planner/stream/stream-plan.js';
import { insertsOnly as plannedInsertsOnly } from '../../planner/stream/unique-key.js';
import { compile, compilePredicate, type Evaluator } from '../expr/expression.js';
import type { Runtime } from '../batch/runtime.js';
import { KeyMap } from '../expr/row-hash.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import { AggregateGroupCache } from './agg-cache.js';
import { cacheableTypes } from './join-cache.js';
import type { StreamContext } from './stream-context.js';
import { movedKeyColumn, toTableOrder, WatermarkCleaner } from './state-cleaning.js';
import type { StreamNode } from './stream-node.js';

type Plan = Extract<StreamPlan, { kind: 'StreamHashAggregate' }>;

const NUMERIC = scalar('numeric');
const INT8_MAX = 9223372036854775807n;
const INT8_MIN = -9223372036854775808n;

let numericDivide: ScalarImpl | undefined;
function divide(sum: Numeric, count: number, runtime: Runtime): Value {
  if (numericDivide === undefined) {
    const resolved = resolveOperator('/', NUMERIC, NUMERIC);
    if (resolved === undefined) throw new SqlError(SqlState.internalError, 'operator numeric / numeric is missing');
    numericDivide = resolved.fn.impl;
  }
  return numericDivide([sum, new Numeric(BigInt(count), 0)], runtime.evalContext);
}

function pow10(exponent: number): bigint {
  return 10n ** BigInt(exponent);
}

/**
 * One call's accumulator in one group (only the fields of its mode are used). Small: every call of
 * every group changed in an epoch has one until the epoch's output (q16: 13 calls, thousands of
 * groups an epoch).
 */
class CallState {
  /** count; non-null count of a sum or avg; bool_and / bool_or: how many values are true. */
  n = 0;
  /** bool_and / bool_or: how many values are false. */
  falses = 0;
  best: Value = null;
  /** sum / avg: the exact total (none until the first value). */
  sum: SumState | undefined = undefined;
}

/** A sum's or avg's exact total. */
class SumState {
  /** Exact sum of the finite values, unscaled at `scale`. */
  total = 0n;
  scale = 0;
  nan = 0;
  pinf = 0;
  ninf = 0;
  /** numeric: how many values of each scale are present. */
  scales: Map<number, number> | undefined;
}

/** The total of a sum over no value. */
const NO_SUM: Readonly<SumState> = Object.freeze(new SumState());

interface CompiledCall {
  readonly spec: RetractableCall;
  readonly argument: Evaluator | undefined;
  readonly filter: ((row: Row, runtime: Runtime) => boolean) | undefined;
  readonly argumentType: DataType | undefined;
  /** For min: -1, max: +1. */
  readonly direction: number;
  /** A min / max over an append-only input: kept in the state row alone, no value table. */
  readonly appendOnlyExtreme: boolean;
}

/**
 * A batch's changed values per value table (min / max / DISTINCT): keyed by `[group, value]` (the
 * group's position in `dirty`), with their count deltas. One map per table and batch, not per group.
 */
type BatchDeltas = (KeyMap<number> | undefined)[];

const INT4 = scalar('int4');

/**
 * The per-epoch combine's bound: a holding aggregate emits its dirty groups once this many are
 * dirty, unless the engine's `aggregateCombineGroups` says otherwise; 0 emits after every batch
 * (no combining).
 */
export const aggregateCombine = { maxGroups: 65_536 };

export class StreamHashAggregateNode implements StreamNode {
  private readonly groups: StateTable;
  private readonly valueTables: readonly StateTable[];
  private readonly valueTypes: readonly DataType[];
  private readonly keyEvaluators: readonly Evaluator[];
  /** Per group key: the input column it is, or -1 where its evaluator computes it. */
  private readonly keyColumns: Int32Array;
  /** Each change's group (its position in `dirty`) in the batch being applied (reused, grown as needed). */
  private groupOf = new Int32Array(1024);
  /** Groups changed since the last output, in order of first change; per position their stored row, state and last output. */
  private dirty: KeyMap<number>;
  private dirtyStored: (Row | undefined)[] = [];
  private dirtyStates: GroupState[] = [];
  private dirtyBefores: (Row | undefined)[] = [];
  /** Holding: batches fold into `dirty` and emit nothing until `seal` (or the bound). */
  private holding = false;
  private readonly keyTypes: readonly DataType[];
  private readonly outputTypes: readonly DataType[];
  private readonly calls: readonly CompiledCall[];
  /** encode()'s working row, copied at its length into each state row. */
  private readonly encodeScratch: Value[] = [];
  /** Per value table: the calls it feeds (not the append-only min / max, which need none). */
  private readonly callsOfValueTable: readonly (readonly CompiledCall[])[];
  /** The input only inserts (`appendOnly`). */
  private readonly appendOnly: boolean;
  /** The group state rows in memory (agg-cache.ts), or undefined when the key types are not cacheable. */
  private readonly cache: AggregateGroupCache | undefined;
  /** Under EMIT ON WINDOW CLOSE, by a group key following a watermark: deletes the closed groups (state-cleaning.ts). */
  private readonly cleaner: WatermarkCleaner | undefined;
  /** The group key column the state tables key first (cleaned by watermark, plan version 5), or -1: keys in group order. */
  private readonly movedKey: number;
  /** A group key in the state tables' key order (`movedKey`), for a point read. */
  private readonly tableKey: Value[] = [];
  /**
   * Per value table: another value table holding a superset of its values in every group (the
   * same column argument without a FILTER), or -1. A value absent from the superset before a batch
   * is absent from this table too, with no read (q16's FILTERed DISTINCT counts: most of a new
   * (group, value) pair's reads are of values no table holds yet).
   */
  private readonly supersetOf: Int32Array;
  /** The value tables in the order their deltas are applied: every superset before the tables it covers. */
  private readonly valueTableOrder: readonly number[];
  /** Per value table: the changed values' counts before and after the batch (for the group being applied; reused). */
  private readonly oldCounts: number[][];
  private readonly newCounts: number[][];
  /** A group key and a value (`key ++ value`) for a value table's point read (reused). */
  private readonly valueScratch: Value[] = [];
  /** A group's position and a value, for a probe of a batch's changed values (reused). */
  private readonly probe: Value[] = [0, null];
  /** Per value table: the types of its batch deltas' keys (`[group, value]`). */
  private readonly deltaTypes: readonly (readonly DataType[])[];

  constructor(
    plan: Plan,
    private readonly context: StreamContext,
    /** The input only inserts: `appendOnly` of the input, or what the main thread found (a parallel aggregate's worker gets no input plan). */
    insertsOnly = plannedInsertsOnly(plan.inputs[0]!, true),
  ) {
    const tables = plan.stateTables.map((declaration) => context.stateTable(declaration));
    this.groups = tables[0]!;
    this.valueTables = tables.slice(1);
    this.keyEvaluators = plan.groupKeys.map(compile);
    this.keyColumns = Int32Array.from(plan.groupKeys, (key) => (key.kind === 'Column' ? key.index : -1));
    this.keyTypes = plan.groupKeys.map((key) => key.type);
    this.outputTypes = plan.columns.map((column) => column.type);
    this.valueTypes = plan.stateTables.slice(1).map((declaration) => declaration.columnTypes[this.keyTypes.length]!);
    this.appendOnly = insertsOnly;
    this.calls = plan.calls.map((spec) => ({
      spec,
      argument: spec.call.args[0] === undefined ? undefined : compile(spec.call.args[0]),
      filter: spec.call.filter === undefined ? undefined : compilePredicate(spec.call.filter),
      argumentType: spec.call.args[0]?.type,
      direction: spec.mode === 'min' ? -1 : 1,
      appendOnlyExtreme: insertsOnly && (spec.mode === 'min' || spec.mode === 'max'),
    }));
    this.callsOfValueTable = this.valueTables.map((_, index) => this.calls.filter((call) => call.spec.valueTable === index + 1 && !call.appendOnlyExtreme));
    this.cache = cacheableTypes(this.keyTypes) ? new AggregateGroupCache(context.groupCaches, this.keyTypes.length, plan.clean?.key ?? -1) : undefined;
    this.dirty = new KeyMap<number>(this.keyTypes);
    this.cleaner = plan.clean === undefined ? undefined : new WatermarkCleaner(plan.clean, this.keyTypes[plan.clean.key]!, context);
    this.movedKey = movedKeyColumn(plan.clean, this.groups);
    this.supersetOf = Int32Array.from(this.valueTables, (_, index) => this.supersetTable(index));
    this.valueTableOrder = [...this.valueTables.keys()].sort((a, b) => Number(this.supersetOf[a]! >= 0) - Number(this.supersetOf[b]! >= 0));
    this.deltaTypes = this.valueTypes.map((type) => [INT4, type]);
    this.oldCounts = this.valueTables.map(() => []);
    this.newCounts = this.valueTables.map(() => []);
  }

  /**
   * The value table holding every value of table `index` (0-based), or -1: one fed without a FILTER
   * by a call on the same input column, while `index`'s calls have a FILTER. Each row a FILTER
   * passes is counted in both, so a value's count in `index` never exceeds its count there. Only a
   * column argument: another expression could be volatile and give each table its own value.
   */
  private supersetTable(index: number): number {
    const calls = this.callsOfValueTable[index]!;
    const argument = calls[0]?.spec.call.args[0];
    if (argument === undefined || argument.kind !== 'Column' || calls[0]!.spec.call.filter === undefined) return -1;
    return this.callsOfValueTable.findIndex((other) => {
      const call = other[0]?.spec.call;
      const column = call?.args[0];
      return call !== undefined && call.filter === undefined && column !== undefined && column.kind === 'Column' && column.index === argument.index;
    });
  }

  /** The stored state row of a group. */
  private readGroup(key: Row): Row | undefined {
    if (this.movedKey < 0) return this.groups.get(key);
    const tableKey = this.tableKey;
    tableKey.length = key.length;
    for (let i = 0; i < key.length; i++) tableKey[i] = key[i]!;
    return this.groups.get(toTableOrder(tableKey, this.movedKey));
  }

  /** `values` (a group key, then a value) in a value table's key order: a new array. */
  private valueKey(values: Value[]): Value[] {
    return this.movedKey < 0 ? values : toTableOrder(values, this.movedKey);
  }

  /** The open epoch was aborted: its writes are gone from the state, so the cache and the dirty groups go too. */
  discard(): void {
    this.cache?.reset();
    this.cleaner?.reset();
    this.resetDirty();
  }

  /** While holding, batches emit nothing; `seal` emits the net change of every group since. */
  setHolding(on: boolean): void {
    this.holding = on;
  }

  /** The net change of every group changed since the last output, its state row written once. */
  seal(): ChangeBatch {
    return this.emit();
  }

  /** The view was dropped. */
  dispose(): void {
    this.cache?.dispose();
  }

  /** At the first change: a group table of at most `completeLoadRows` rows is cached whole (complete). */
  private loadWhole(cache: AggregateGroupCache): void {
    cache.loaded = true;
    const limit = this.context.groupCaches.completeLoadRows;
    const rows: Row[] = [];
    for (const row of this.groups.scan({ limit: limit + 1 })) rows.push(row);
    if (rows.length > limit) return;
    cache.clear();
    const width = this.keyTypes.length;
    for (const row of rows) cache.set(row.slice(0, width), row);
    // Complete unless the budget already took some of it back.
    cache.complete = cache.size === rows.length;
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    return this.applyAll([changes]);
  }

  /** A keyless aggregate outputs its row over no input at creation (count 0, sum NULL). */
  initial(): ChangeBatch {
    const out = emptyChanges();
    if (this.keyTypes.length === 0) {
      out.rows.push(this.output([], this.fresh(), true));
      out.signs.push(1);
    }
    return out;
  }

  applyAll(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch {
    const changes = changesPerSlot[0];
    if (changes === undefined || changes.rows.length === 0) return this.holding ? emptyChanges() : this.emit();
    const runtime = this.context.runtime;
    const cache = this.cache;
    if (this.cleaner !== undefined && this.dirty.size === 0) this.cleanClosed(this.cleaner);
    if (cache !== undefined && !cache.loaded) this.loadWhole(cache);
    // Each changed row's group (`groupOf`), new groups appended to `dirty`: no arrays per group.
    const first = this.dirty.size;
    this.groupRows(changes, runtime);
    const dirty = this.dirty;
    const size = dirty.size;
    const groupOf = this.groupOf;
    const storedRows = this.dirtyStored;
    const states = this.dirtyStates;
    const befores = this.dirtyBefores;
    // Every new group's state row read (groups already dirty hold theirs); no state row is written before the output.
    for (let g = first; g < size; g++) {
      const key = dirty.keys[g]!;
      let stored: Row | undefined;
      if (cache === undefined) stored = this.readGroup(key);
      else {
        stored = cache.get(key);
        // Not cached: a new group when the cache is complete, else read (cached with the write at the output).
        if (stored === undefined && !cache.complete) stored = this.readGroup(key);
      }
      storedRows.push(stored);
      const state = stored === undefined ? this.fresh() : this.decode(stored);
      states.push(state);
      befores.push(stored !== undefined || key.length === 0 ? this.output(key, state, false) : undefined);
    }
    // Fold the changes in input order, each into its group's state.
    const rows = changes.rows;
    const signs = changes.signs;
    if (this.valueTables.length === 0) {
      for (let i = 0; i < rows.length; i++) this.foldRow(states[groupOf[i]!]!, rows[i]!, signs[i]!, runtime, -1, undefined);
    } else {
      const deltas: BatchDeltas = this.valueTables.map(() => undefined);
      for (let i = 0; i < rows.length; i++) {
        const g = groupOf[i]!;
        this.foldRow(states[g]!, rows[i]!, signs[i]!, runtime, g, deltas);
      }
      // The value tables follow every batch (min / max read them): reads of all groups first, then the writes.
      const valueWrites: Row[][] = this.valueTables.map(() => []);
      this.applyValueDeltas(deltas, valueWrites, first);
      const countColumn = this.keyTypes.length + 1;
      valueWrites.forEach((writes, index) => {
        const table = this.valueTables[index]!;
        for (const row of writes) {
          if ((row[countColumn] as bigint) > 0n) table.insert(row);
          else table.delete(row);
        }
      });
    }
    if (!this.holding || size >= (this.context.tuning.aggregateCombineGroups ?? aggregateCombine.maxGroups)) return this.emit();
    return emptyChanges();
  }

  /** Deletes the groups (and their value rows) whose window the watermark closed since the last clean. */
  private cleanClosed(cleaner: WatermarkCleaner): void {
    const bound = cleaner.advance();
    if (bound === null) return;
    const cache = this.cache;
    const width = this.keyTypes.length;
    if (cleaner.ranged(this.groups)) {
      // Keyed by the window first: one range delete, and the cached closed groups dropped.
      this.groups.deleteBelow!([bound]);
      cache?.deleteClosed((value) => cleaner.closes(value, bound));
    } else {
      // A complete cache holds every group: no scan of the table (and of its deleted versions).
      const closed = cache !== undefined && cache.complete ? cleaner.closedOf(cache.rows(), bound) : cleaner.closedRows(this.groups, bound);
      for (const row of closed) {
        this.groups.delete(row);
        if (cache !== undefined) cache.delete(row.slice(0, width));
      }
    }
    for (const table of this.valueTables) {
      if (cleaner.ranged(table)) table.deleteBelow!([bound]);
      else for (const row of cleaner.closedRows(table, bound)) table.delete(row);
    }
  }

  private resetDirty(): void {
    if (this.dirty.size === 0) return;
    this.dirty = new KeyMap<number>(this.keyTypes);
    this.dirtyStored = [];
    this.dirtyStates = [];
    this.dirtyBefores = [];
  }

  /** Every dirty group's `-before +after` (nothing when equal), its state row written (or deleted once empty). */
  private emit(): ChangeBatch {
    const out = emptyChanges();
    const dirty = this.dirty;
    const size = dirty.size;
    if (size === 0) return out;
    const cache = this.cache;
    const storedRows = this.dirtyStored;
    const states = this.dirtyStates;
    const befores = this.dirtyBefores;
    const groupWrites: { row: Row; keep: boolean; key: Value[] }[] = [];
    for (let g = 0; g < size; g++) {
      const key = dirty.keys[g]!;
      const stored = storedRows[g];
      const state = states[g]!;
      const keyless = key.length === 0;
      const before = befores[g];
      const after = state.rows > 0 || keyless ? this.output(key, state, true) : undefined;
      if (state.rows > 0 || keyless) groupWrites.push({ row: this.encode(key, state), keep: true, key });
      else if (stored !== undefined) groupWrites.push({ row: stored, keep: false, key });
      if (before !== undefined && after !== undefined && rowsEqual(before, after, this.outputTypes)) continue;
      if (before !== undefined) {
        out.rows.push(before);
        out.signs.push(-1);
      }
      if (after !== undefined) {
        out.rows.push(after);
        out.signs.push(1);
      }
    }
    this.resetDirty();
    for (const write of groupWrites) {
      if (write.keep) this.groups.insert(write.row);
      else this.groups.delete(write.row);
    }
    // The cache follows the writes (after them: a budget eviction may end completeness, never mid-read).
    if (cache !== undefined) {
      for (const write of groupWrites) {
        if (write.keep) cache.set(write.key, write.row);
        else cache.delete(write.key);
      }
    }
    return out;
  }

  /**
   * Adds the changed groups' keys not yet dirty to `dirty` (in order of first change), and each change's group in `groupOf`. Key
   * columns that are input columns are read by index (no evaluator call); the hash of a key is
   * computed once.
   */
  private groupRows(changes: ChangeBatch, runtime: Runtime): void {
    const byKey = this.dirty;
    const rows = changes.rows;
    if (this.groupOf.length < rows.length) this.groupOf = new Int32Array(Math.max(rows.length, this.groupOf.length * 2));
    const groupOf = this.groupOf;
    const evaluators = this.keyEvaluators;
    const columns = this.keyColumns;
    const hasher = byKey.hash;
    const width = evaluators.length;
    const scratch: Value[] = new Array(width);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      for (let k = 0; k < width; k++) {
        const column = columns[k]!;
        if (column >= 0) {
          scratch[k] = row[column] as Value;
          continue;
        }
        try {
          scratch[k] = evaluators[k]!(row, runtime);
        } catch (error) {
          this.context.recordError(error);
          scratch[k] = null;
        }
      }
      const hash = hasher(scratch);
      let index = byKey.indexOf(scratch, hash);
      if (index < 0) index = byKey.add(scratch.slice(), 0, hash);
      groupOf[i] = index;
    }
  }

  /** Folds one change into its group's (position `g`'s) state, its values into the batch's `deltas` per value table. */
  private foldRow(state: GroupState, row: Row, sign: number, runtime: Runtime, g: number, deltas: BatchDeltas | undefined): void {
    if (sign < 0 && this.appendOnly) throw new SqlError(SqlState.internalError, 'a deletion reached an aggregate over an append-only input');
    state.rows += sign;
    const calls = this.calls;
    for (let c = 0; c < calls.length; c++) {
      const call = calls[c]!;
      const table = call.spec.valueTable;
      if (call.appendOnlyExtreme) {
        this.foldExtreme(call, state.calls[c]!, row, runtime);
        continue;
      }
      // Calls sharing a value table (same argument and FILTER) count a value once.
      if (table !== undefined && this.firstCallOf(table) !== call) continue;
      if (call.filter !== undefined && !this.passes(call, row, runtime)) continue;
      let value: Value = null;
      if (call.argument !== undefined) {
        try {
          value = call.argument(row, runtime);
        } catch (error) {
          this.context.recordError(error);
          value = null;
        }
        if (value === null) continue;
      }
      if (table !== undefined) {
        // min / max / DISTINCT: through the value table.
        const map = (deltas![table - 1] ??= new KeyMap<number>(this.deltaTypes[table - 1]!));
        const probe = this.probe;
        probe[0] = g;
        probe[1] = value;
        const hash = map.hash(probe);
        const index = map.indexOf(probe, hash);
        if (index < 0) map.add([g, value], sign, hash);
        else map.values[index]! += sign;
        continue;
      }
      accumulate(call, state.calls[c]!, value, sign);
    }
  }

  /** An inserted row's value into an append-only min / max: the better of it and the current one. */
  private foldExtreme(call: CompiledCall, callState: CallState, row: Row, runtime: Runtime): void {
    if (call.filter !== undefined && !this.passes(call, row, runtime)) return;
    let value: Value;
    try {
      value = call.argument!(row, runtime);
    } catch (error) {
      this.context.recordError(error);
      return;
    }
    if (value === null) return;
    const best = callState.best;
    if (best === null || call.direction * compareValues(value, best, call.argumentType!) > 0) callState.best = value;
  }

  private passes(call: CompiledCall, row: Row, runtime: Runtime): boolean {
    try {
      return call.filter!(row, runtime);
    } catch (error) {
      this.context.recordError(error);
      return false;
    }
  }

  private firstCallOf(table: number): CompiledCall {
    return this.callsOfValueTable[table - 1]![0]!;
  }

  /**
   * Reads the value tables' counts of the batch's changed values, updates DISTINCT and min / max,
   * and queues the value rows' writes. A group new to this batch (position `first` or later) without
   * a state row has no value rows either: no reads (a value row counts rows of a live group; the
   * last row's deletion deletes both; a backfill creates every group this way).
   */
  private applyValueDeltas(deltas: BatchDeltas, writes: Row[][], first: number): void {
    const keys = this.dirty.keys;
    const storedRows = this.dirtyStored;
    const states = this.dirtyStates;
    const point = this.valueScratch;
    const probe = this.probe;
    for (const t of this.valueTableOrder) {
      const map = deltas[t];
      // A table only append-only min / max share has no calls left to feed.
      if (map === undefined || this.callsOfValueTable[t]!.length === 0) continue;
      const table = this.valueTables[t]!;
      const oldCounts = this.oldCounts[t]!;
      const newCounts = this.newCounts[t]!;
      oldCounts.length = map.size;
      newCounts.length = map.size;
      const superset = this.supersetOf[t]!;
      const supersetMap = superset < 0 ? undefined : deltas[superset];
      const supersetOld = superset < 0 ? undefined : this.oldCounts[superset]!;
      for (let i = 0; i < map.size; i++) {
        const entry = map.keys[i]!;
        const g = entry[0] as number;
        const value = entry[1]!;
        const key = keys[g]!;
        const keyWidth = key.length;
        let stored: Row | undefined;
        if (g < first || storedRows[g] !== undefined) {
          let known = false;
          if (supersetMap !== undefined) {
            probe[0] = g;
            probe[1] = value;
            const at = supersetMap.indexOf(probe);
            // Absent from the superset before the batch: absent here too.
            known = at >= 0 && supersetOld![at]! <= 0;
          }
          if (!known) {
            point.length = keyWidth + 1;
            for (let k = 0; k < keyWidth; k++) point[k] = key[k]!;
            point[keyWidth] = value;
            stored = table.get(this.movedKey < 0 ? point : this.valueKey(point.slice()));
          }
        }
        const old = stored === undefined ? 0 : Number(stored[keyWidth + 1] as bigint);
        const delta = map.values[i]!;
        oldCounts[i] = old;
        newCounts[i] = old + delta;
        // Over an append-only input only a value's presence matters (no count ever falls): a value
        // row is written when the value first appears, not at each later row.
        if (delta !== 0 && !(this.appendOnly && old > 0)) writes[t]!.push([...key, stored === undefined ? value : stored[keyWidth]!, BigInt(Math.max(newCounts[i]!, 0))]);
      }
      for (const call of this.callsOfValueTable[t]!) {
        const c = this.calls.indexOf(call);
        if (call.spec.mode === 'min' || call.spec.mode === 'max') {
          this.extremes(call, c, table, map, newCounts);
          continue;
        }
        for (let i = 0; i < map.size; i++) {
          const old = oldCounts[i]!;
          const now = newCounts[i]!;
          if (old <= 0 && now > 0) accumulate(call, states[map.keys[i]![0] as number]!.calls[c]!, map.keys[i]![1]!, 1);
          else if (old > 0 && now <= 0) accumulate(call, states[map.keys[i]![0] as number]!.calls[c]!, map.keys[i]![1]!, -1);
        }
      }
    }
  }

  /**
   * The new min (max) of each group with changed values: the best of the values that gained rows
   * and the old one, unless the old one lost its last row; then the value table's first (last)
   * value still present.
   */
  private extremes(call: CompiledCall, c: number, table: StateTable, changed: KeyMap<number>, newCounts: readonly number[]): void {
    const type = call.argumentType!;
    const direction = call.direction;
    // Per changed group: the best changed value still present (null: none).
    const bestOf = new Map<number, Value>();
    for (let i = 0; i < changed.size; i++) {
      const g = changed.keys[i]![0] as number;
      const best = bestOf.get(g) ?? null;
      if (!bestOf.has(g)) bestOf.set(g, null);
      if (newCounts[i]! <= 0) continue;
      const value = changed.keys[i]![1]!;
      if (best === null || direction * compareValues(value, best, type) > 0) bestOf.set(g, value);
    }
    const probe = this.probe;
    for (const [g, best] of bestOf) {
      const callState = this.dirtyStates[g]!.calls[c]!;
      const old = callState.best;
      if (old === null) {
        callState.best = best;
        continue;
      }
      probe[0] = g;
      probe[1] = old;
      const index = changed.indexOf(probe);
      let survivor: Value = old;
      if (index >= 0 && newCounts[index]! <= 0) {
        survivor = null;
        const key = this.dirty.keys[g]!;
        const keyWidth = key.length;
        const scan = table.scan({ ...(keyWidth > 0 ? { start: this.valueKey([...key]) } : {}), end: this.valueKey([...key, null]), reverse: direction > 0 });
        for (const row of scan) {
          const value = row[keyWidth]!;
          if ((row[keyWidth + 1] as bigint) <= 0n) continue;
          probe[0] = g;
          probe[1] = value;
          const at = changed.indexOf(probe);
          if (at >= 0 && newCounts[at]! <= 0) continue;
          survivor = value;
          break;
        }
      }
      if (survivor === null) callState.best = best;
      else if (best === null || direction * compareValues(survivor, best, type) >= 0) callState.best = survivor;
      else callState.best = best;
    }
  }

  private fresh(): GroupState {
    return { rows: 0, calls: this.calls.map(() => new CallState()) };
  }

  private decode(stored: Row): GroupState {
    const state: GroupState = { rows: Number(stored[this.keyTypes.length] as bigint), calls: [] };
    for (const call of this.calls) {
      const s = new CallState();
      const column = call.spec.column;
      switch (call.spec.mode) {
        case 'count':
          s.n = Number(stored[column] as bigint);
          break;
        case 'sum':
        case 'avg': {
          const total = stored[column] as Numeric;
          const sum = (s.sum = new SumState());
          sum.total = total.unscaled;
          sum.scale = total.scale;
          s.n = Number(stored[column + 1] as bigint);
          if (call.spec.arithmetic === 'numeric') decodeNumericCounts(stored[column + 2] as string, sum);
          break;
        }
        case 'bool_and':
        case 'bool_or':
          s.n = Number(stored[column] as bigint);
          s.falses = Number(stored[column + 1] as bigint);
          break;
        case 'min':
        case 'max':
          s.best = stored[column]!;
          break;
      }
      state.calls.push(s);
    }
    return state;
  }

  private encode(key: Value[], state: GroupState): Row {
    // Built in a scratch row and copied at its exact length: a row grown by push keeps V8's spare
    // capacity (about 17 slots, 136 bytes) for as long as the row cache holds it, which the cache's
    // charge (storage/row-cache.ts entryBytes: 8 bytes a value) does not see.
    const row = this.encodeScratch;
    let at = 0;
    for (let i = 0; i < key.length; i++) row[at++] = key[i]!;
    row[at++] = BigInt(state.rows);
    this.calls.forEach((call, index) => {
      const s = state.calls[index]!;
      switch (call.spec.mode) {
        case 'count':
          row[at++] = BigInt(s.n);
          break;
        case 'sum':
        case 'avg': {
          const sum = s.sum ?? NO_SUM;
          row[at++] = new Numeric(sum.total, sum.scale);
          row[at++] = BigInt(s.n);
          if (call.spec.arithmetic === 'numeric') row[at++] = encodeNumericCounts(sum);
          break;
        }
        case 'bool_and':
        case 'bool_or':
          row[at++] = BigInt(s.n);
          row[at++] = BigInt(s.falses);
          break;
        case 'min':
        case 'max':
          row[at++] = s.best;
          break;
      }
    });
    return row.slice(0, at);
  }

  /** The group's output row: keys, then each call's result (a failing one NULL, recorded if `record`). */
  private output(key: Value[], state: GroupState, record: boolean): Row {
    // Exact length (see encode): the view's row cache holds these rows.
    const row: Row = new Array<Value>(key.length + this.calls.length);
    for (let i = 0; i < key.length; i++) row[i] = key[i]!;
    const runtime = this.context.runtime;
    for (let c = 0; c < this.calls.length; c++) {
      try {
        row[key.length + c] = result(this.calls[c]!, state.calls[c]!, runtime);
      } catch (error) {
        if (record) this.context.recordError(error);
        row[key.length + c] = null;
      }
    }
    return row;
  }
}

interface GroupState {
  rows: number;
  readonly calls: CallState[];
}

function accumulate(call: CompiledCall, s: CallState, value: Value, sign: number): void {
  switch (call.spec.mode) {
    case 'count':
      s.n += sign;
      return;
    case 'sum':
    case 'avg':
      s.n += sign;
      if (call.spec.arithmetic !== 'numeric') {
        (s.sum ??= new SumState()).total += typeof value === 'bigint' ? (sign > 0 ? value : -value) : BigInt((value as number) * sign);
        return;
      }
      addNumeric((s.sum ??= new SumState()), value as Numeric, sign);
      return;
    case 'bool_and':
    case 'bool_or':
      if (value === true) s.n += sign;
      else s.falses += sign;
      return;
    case 'min':
    case 'max':
      return;
  }
}

function addNumeric(s: SumState, value: Numeric, sign: number): void {
  if (value.special !== undefined) {
    if (value.special === 'nan') s.nan += sign;
    else if (value.special === 'inf') s.pinf += sign;
    else s.ninf += sign;
    return;
  }
  const scales = (s.scales ??= new Map());
  const count = (scales.get(value.scale) ?? 0) + sign;
  if (count === 0) scales.delete(value.scale);
  else scales.set(value.scale, count);
  let unscaled = value.unscaled;
  if (value.scale > s.scale) {
    s.total *= pow10(value.scale - s.scale);
    s.scale = value.scale;
  } else if (value.scale < s.scale) unscaled *= pow10(s.scale - value.scale);
  s.total += sign > 0 ? unscaled : -unscaled;
}

/** The sum as the batch's numeric additions would give it: largest scale present, specials first. */
function numericSum(s: SumState): Numeric {
  if (s.nan > 0 || (s.pinf > 0 && s.ninf > 0)) return Numeric.NaN;
  if (s.pinf > 0) return Numeric.Infinity;
  if (s.ninf > 0) return Numeric.NegativeInfinity;
  let scale = 0;
  for (const [present, count] of s.scales ?? []) if (count > 0 && present > scale) scale = present;
  if (scale >= s.scale) return new Numeric(s.total * pow10(scale - s.scale), scale);
  return new Numeric(s.total / pow10(s.scale - scale), scale);
}

function result(call: CompiledCall, s: CallState, runtime: Runtime): Value {
  switch (call.spec.mode) {
    case 'count':
      return BigInt(s.n);
    case 'sum':
      if (s.n <= 0) return null;
      if (call.spec.arithmetic === 'int') {
        const total = (s.sum ?? NO_SUM).total;
        if (total > INT8_MAX || total < INT8_MIN) throw new SqlError(SqlState.numericValueOutOfRange, 'bigint out of range');
        return total;
      }
      return call.spec.arithmetic === 'int8' ? new Numeric((s.sum ?? NO_SUM).total, 0) : numericSum(s.sum ?? NO_SUM);
    case 'avg':
      if (s.n <= 0) return null;
      return divide(call.spec.arithmetic === 'numeric' ? numericSum(s.sum ?? NO_SUM) : new Numeric((s.sum ?? NO_SUM).total, 0), s.n, runtime);
    case 'bool_and':
      return s.n + s.falses <= 0 ? null : s.falses === 0;
    case 'bool_or':
      return s.n + s.falses <= 0 ? null : s.n > 0;
    case 'min':
    case 'max':
      return s.best;
  }
}

/** `nan pinf ninf scale:count ...` */
function encodeNumericCounts(s: Readonly<SumState>): string {
  let text = `${s.nan} ${s.pinf} ${s.ninf}`;
  for (const [scale, count] of s.scales ?? []) if (count !== 0) text += ` ${scale}:${count}`;
  return text;
}

function decodeNumericCounts(text: string, s: SumState): void {
  const parts = text.split(' ');
  s.nan = Number(parts[0]);
  s.pinf = Number(parts[1]);
  s.ninf = Number(parts[2]);
  if (parts.length > 3) {
    s.scales = new Map();
    for (let i = 3; i < parts.length; i++) {
      const [scale, count] = parts[i]!.split(':');
      s.scales.set(Number(scale), Number(count));
    }
  }
}

/** Equal outputs emit nothing; numerics must also agree in scale (1.0 and 1.00 print differently). */
function rowsEqual(a: Row, b: Row, types: readonly DataType[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (x === null || y === null) return false;
    if (compareValues(x, y, types[i]!) !== 0) return false;
    if (x instanceof Numeric && (y as Numeric).scale !== x.scale) return false;
  }
  return true;
}
