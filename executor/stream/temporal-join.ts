// StreamTemporalJoin: `JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON ...` (RisingWave's and Flink's
// processing-time temporal join, a lookup join). Each left change looks up the right table's row
// by primary key as the table is in the epoch the change arrives in, and emits the joined row
// (inner), or the left row NULL-padded when nothing matches (left outer). Later changes of the
// right table do not reach the view: the join keeps no state of the right side, and none of the
// left side over an append-only source (Nexmark q13's bids).
//
// A join whose ON equalities cover a secondary index's columns but not the primary key looks the
// table up by the index (`TemporalJoinOperator.index`): every row of the key that matches, read
// through the index's entries, or from an in-memory copy grouped by the index's columns.
//
// Lookups go by batch: a table of at most `completeRows` rows is read whole at the first change and
// kept as a map by key (`cache`), which the table's own changes (input 1, whole rows) keep current
// by reading their keys again; a larger table is read per batch, the batch's distinct keys in key
// order, one point read each. Input 1 emits nothing: the right table's changes are only a signal.
//
// A left side that can retract (a table, or anything but an append-only source) keeps, per left
// row, the right row it joined with (`memo`: `left ++ right ++ count`, the right row all NULLs
// when a left join padded it): a retraction emits exactly the row its insert emitted, whatever
// the right table holds by then, so the view stays a multiset of what was emitted. An inner-join
// miss keeps nothing (it emitted nothing). RisingWave's non-append-only temporal join keeps a memo
// table for the same reason. Two left rows equal in every column are told apart by nothing: a
// retraction takes either one's joined row (the planner gives a left table scan its primary key back,
// so this concerns left sides such as joins).
//
// The in-memory copy of a small table is not charged to the view caches' memory budget
// (join-cache.ts `GroupCacheBudget`): `completeRows` bounds it.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { StateTable } from '../../storage/state-table.js';
import type { TemporalJoinOperator } from '../../planner/stream/stream-plan.js';
import { compareValues } from '../../sql/compare.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { KeyMap } from '../expr/row-hash.js';
import { concatRows, nullRow } from '../batch/join-output.js';
import { stateTableOf } from '../batch/table-access.js';
import { indexStateTable } from '../catalog/secondary-index.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

/** Right tables of at most `completeRows` rows are read whole and kept in memory (tests lower it). */
export const temporalJoinDefaults = { completeRows: 100_000 };

/** Key types whose values are equal exactly when they are === (a plain Map's keys). */
const PLAIN_KEY_TYPES = new Set(['int2', 'int4', 'int8', 'text', 'varchar', 'bpchar', 'bool', 'date']);

/** The right rows of one batch or of the whole table: by key, the projected row that passed the filter (null: none). */
interface Lookup {
  get(key: Value[]): Row | null | undefined;
}

export class StreamTemporalJoinNode implements StreamNode {
  private readonly table: StateTable;
  /** A secondary index the lookups go by (`TemporalJoinOperator.index`): several matches per key. */
  private readonly indexTable: StateTable | undefined;
  /** The looked-up columns of the table: its primary key, or the index's columns. */
  private readonly keyColumns: readonly number[];
  /** By index: the whole table by index key (the rows of each key), once read. */
  private multiCache: KeyMap<Row[]> | undefined;
  private readonly memo: StateTable | undefined;
  private readonly keyEvaluators: readonly Evaluator[];
  private readonly keyTypes: readonly DataType[];
  /** One key of a type a plain Map holds. */
  private readonly plainKey: boolean;
  private readonly primaryKey: readonly number[];
  private readonly projection: readonly number[];
  private readonly filter: Evaluator | undefined;
  private readonly otherLeft: readonly Evaluator[];
  private readonly otherRight: readonly Evaluator[];
  private readonly otherTypes: readonly DataType[];
  private readonly otherNullSafe: readonly boolean[];
  private readonly residual: Evaluator | undefined;
  private readonly outer: boolean;
  private readonly padding: Row;
  private readonly leftTypes: readonly DataType[];
  private readonly rightWidth: number;
  private readonly rightTypes: readonly DataType[];
  /** The whole table by key (`completeRows` at most), once read; undefined: not read or too large. */
  private plainCache: Map<Value, Row | null> | undefined;
  private keyedCache: KeyMap<Row | null> | undefined;
  /** The table was found larger than `completeRows`: read per batch. */
  private tooLarge = false;

  constructor(
    plan: TemporalJoinOperator,
    private readonly context: StreamContext,
  ) {
    const relation = plan.relation;
    this.table = stateTableOf(context.store, relation);
    this.indexTable = plan.index === undefined ? undefined : indexStateTable(context.store, relation, plan.index);
    this.keyColumns = plan.index === undefined ? relation.primaryKey : plan.index.indexOn!.columns;
    this.memo = plan.stateTables.length > 0 ? context.stateTable(plan.stateTables[0]!) : undefined;
    this.keyEvaluators = plan.lookupKeys.map(compile);
    this.primaryKey = relation.primaryKey;
    this.keyTypes = this.keyColumns.map((column) => relation.columns[column]!.type);
    this.plainKey = plan.index === undefined && this.keyTypes.length === 1 && PLAIN_KEY_TYPES.has(this.keyTypes[0]!.name);
    this.projection = plan.projection;
    this.filter = plan.filter === undefined ? undefined : compile(plan.filter);
    this.otherLeft = (plan.otherKeys?.[0] ?? []).map(compile);
    this.otherRight = (plan.otherKeys?.[1] ?? []).map(compile);
    this.otherTypes = (plan.otherKeys?.[0] ?? []).map((key) => key.type);
    this.otherNullSafe = plan.otherNullSafe ?? [];
    this.residual = plan.residual === undefined ? undefined : compile(plan.residual);
    this.outer = plan.joinType === 'left';
    this.rightWidth = plan.projection.length;
    this.rightTypes = plan.projection.map((column) => relation.columns[column]!.type);
    this.padding = nullRow(this.rightWidth);
    this.leftTypes = plan.inputs[0]!.columns.map((column) => column.type);
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  /** The open epoch was aborted: the table may have lost writes the cache holds. */
  discard(): void {
    this.dropCache();
  }

  dispose(): void {
    this.dropCache();
  }

  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    if (slot === 1) {
      this.rightChanged(changes);
      return emptyChanges();
    }
    return this.indexTable === undefined ? this.applyLeft(changes) : this.applyLeftByIndex(changes);
  }

  /** The right table's changes first (the left ones see the table as the epoch leaves it), then the left's. */
  applyAll(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch {
    const right = changesPerSlot[1];
    if (right !== undefined && right.rows.length > 0) this.rightChanged(right);
    const left = changesPerSlot[0];
    if (left === undefined || left.rows.length === 0) return emptyChanges();
    return this.indexTable === undefined ? this.applyLeft(left) : this.applyLeftByIndex(left);
  }

  private dropCache(): void {
    this.plainCache = undefined;
    this.keyedCache = undefined;
    this.multiCache = undefined;
    this.tooLarge = false;
  }

  /** The projected row of a stored table row when it passes the scan's filter, else null. */
  private rightRow(stored: Row | undefined): Row | null {
    if (stored === undefined) return null;
    const projection = this.projection;
    const row: Row = new Array(projection.length);
    // A row written before ALTER TABLE ADD COLUMN is shorter: the new columns read NULL.
    for (let i = 0; i < projection.length; i++) row[i] = stored[projection[i]!] ?? null;
    if (this.filter !== undefined) {
      try {
        if (this.filter(row, this.context.runtime) !== true) return null;
      } catch (error) {
        this.context.recordError(error);
        return null;
      }
    }
    return row;
  }

  /** Reads the whole table into the cache when it is small enough (once; again after a drop). */
  private loadWhole(): void {
    if (this.plainCache !== undefined || this.keyedCache !== undefined || this.multiCache !== undefined || this.tooLarge) return;
    if (this.table.stats().keys > temporalJoinDefaults.completeRows * 2) {
      this.tooLarge = true;
      return;
    }
    if (this.indexTable !== undefined) {
      this.loadWholeByIndex();
      return;
    }
    const plain = this.plainKey ? new Map<Value, Row | null>() : undefined;
    const keyed = this.plainKey ? undefined : new KeyMap<Row | null>(this.keyTypes);
    let rows = 0;
    for (const stored of this.table.scan()) {
      if (++rows > temporalJoinDefaults.completeRows) {
        this.tooLarge = true;
        return;
      }
      const row = this.rightRow(stored);
      if (row === null) continue;
      if (plain !== undefined) plain.set(stored[this.primaryKey[0]!]!, row);
      else keyed!.add(this.primaryKey.map((column) => stored[column]!), row);
    }
    this.plainCache = plain;
    this.keyedCache = keyed;
  }

  /** By index: the whole table grouped by the index's columns (rows with a NULL there match nothing). */
  private loadWholeByIndex(): void {
    const groups = new KeyMap<Row[]>(this.keyTypes);
    let rows = 0;
    for (const stored of this.table.scan()) {
      if (++rows > temporalJoinDefaults.completeRows) {
        this.tooLarge = true;
        return;
      }
      const key = this.indexKeyOf(stored);
      const row = key === null ? null : this.rightRow(stored);
      if (row === null) continue;
      const group = groups.get(key!);
      if (group === undefined) groups.add(key!, [row]);
      else group.push(row);
    }
    this.multiCache = groups;
  }

  /** A stored row's values of the looked-up columns, or null when one is NULL. */
  private indexKeyOf(stored: Row): Value[] | null {
    const key: Value[] = new Array(this.keyColumns.length);
    for (let k = 0; k < key.length; k++) {
      const value = stored[this.keyColumns[k]!] ?? null;
      if (value === null) return null;
      key[k] = value;
    }
    return key;
  }

  /** By index: the rows of one index key, read through the index's entries (then by primary key). */
  private rowsByIndex(key: Value[]): Row[] {
    const rows: Row[] = [];
    const width = key.length;
    for (const entry of this.indexTable!.scan({ prefix: key })) {
      const row = this.rightRow(this.table.get(entry.slice(width)));
      if (row !== null) rows.push(row);
    }
    return rows;
  }

  /** The right table changed: each changed key is read again (the change is already in the table). */
  private rightChanged(changes: ChangeBatch): void {
    if (this.multiCache !== undefined) {
      if (changes.rows.length > temporalJoinDefaults.completeRows / 10) {
        this.dropCache();
        return;
      }
      // Both versions of an update come through: the old key's group and the new one's are read again.
      const keys = new KeyMap<true>(this.keyTypes);
      for (const changed of changes.rows) {
        const key = this.indexKeyOf(changed);
        if (key !== null && keys.indexOf(key) < 0) keys.add(key, true);
      }
      for (const key of keys.keys) this.multiCache.set(key, this.rowsByIndex(key));
      return;
    }
    if (this.plainCache === undefined && this.keyedCache === undefined) return;
    if (changes.rows.length > temporalJoinDefaults.completeRows / 10) {
      this.dropCache();
      return;
    }
    const primaryKey = this.primaryKey;
    for (const changed of changes.rows) {
      const key = primaryKey.map((column) => changed[column]!);
      const row = this.rightRow(this.table.get(key));
      if (this.plainCache !== undefined) {
        if (row === null) this.plainCache.delete(key[0]!);
        else this.plainCache.set(key[0]!, row);
      } else this.keyedCache!.set(key, row);
    }
  }

  /** The batch's distinct keys read from the table in key order (a table too large to keep). */
  private readBatch(keys: readonly (Value[] | null)[]): Lookup {
    const distinct = new KeyMap<Row | null>(this.keyTypes);
    for (const key of keys) if (key !== null && distinct.indexOf(key) < 0) distinct.add(key, null);
    const types = this.keyTypes;
    const order = distinct.keys.map((_, i) => i);
    order.sort((a, b) => compareKeys(distinct.keys[a]!, distinct.keys[b]!, types));
    for (const i of order) distinct.values[i] = this.rightRow(this.table.get(distinct.keys[i]!));
    return distinct;
  }

  /** The lookup key of a left row, or null when it can match nothing (a NULL, or an error, recorded). */
  private keyOf(row: Row): Value[] | null {
    const evaluators = this.keyEvaluators;
    const key: Value[] = new Array(evaluators.length);
    for (let k = 0; k < evaluators.length; k++) {
      let value: Value;
      try {
        value = evaluators[k]!(row, this.context.runtime);
      } catch (error) {
        this.context.recordError(error);
        return null;
      }
      if (value === null) return null;
      key[k] = value;
    }
    return key;
  }

  /** The right row `left` joins with, or null (the other ON equalities and the residual decide). */
  private match(left: Row, right: Row | null | undefined): Row | null {
    if (right === null || right === undefined) return null;
    const runtime = this.context.runtime;
    try {
      for (let k = 0; k < this.otherLeft.length; k++) {
        const a = this.otherLeft[k]!(left, runtime);
        const b = this.otherRight[k]!(right, runtime);
        if (a === null || b === null) {
          if (!(this.otherNullSafe[k] && a === null && b === null)) return null;
        } else if (compareValues(a, b, this.otherTypes[k]!) !== 0) return null;
      }
      if (this.residual !== undefined && this.residual(concatRows(left, right), runtime) !== true) return null;
    } catch (error) {
      this.context.recordError(error);
      return null;
    }
    return right;
  }

  private applyLeft(changes: ChangeBatch): ChangeBatch {
    const rows = changes.rows;
    const signs = changes.signs;
    const n = rows.length;
    // Each insert's key; deletions of a left side with a memo look nothing up.
    const keys: (Value[] | null)[] = new Array(n);
    for (let i = 0; i < n; i++) keys[i] = this.memo !== undefined && signs[i]! < 0 ? null : this.keyOf(rows[i]!);
    this.loadWhole();
    let lookup: Lookup | undefined;
    const plain = this.plainCache;
    if (plain === undefined) lookup = this.keyedCache ?? this.readBatch(keys);
    const out = emptyChanges();
    const ids = changes.ids;
    const outIds: Value[] | undefined = ids === undefined ? undefined : [];
    const memo = this.memo === undefined ? undefined : new MemoBatch(this.memo, this.leftTypes, this.rightTypes);
    for (let i = 0; i < n; i++) {
      const left = rows[i]!;
      const sign = signs[i]!;
      if (memo !== undefined && sign < 0) {
        const right = memo.take(left);
        if (right !== undefined) {
          out.rows.push(concatRows(left, right));
          out.signs.push(sign);
        }
        continue;
      }
      const key = keys[i]!;
      const found = key === null ? null : plain !== undefined ? plain.get(key[0]!) : lookup!.get(key);
      const right = this.match(left, found);
      if (right === null && !this.outer) continue;
      const joined = right ?? this.padding;
      out.rows.push(concatRows(left, joined));
      out.signs.push(sign);
      if (outIds !== undefined) outIds.push(ids![i]!);
      memo?.put(left, joined);
    }
    memo?.write();
    return outIds === undefined ? out : { rows: out.rows, signs: out.signs, ids: outIds };
  }

  /** Left changes joined by a secondary index: every right row of the key that matches. */
  private applyLeftByIndex(changes: ChangeBatch): ChangeBatch {
    const rows = changes.rows;
    const signs = changes.signs;
    const n = rows.length;
    this.loadWhole();
    let groups = this.multiCache;
    if (groups === undefined) {
      // Too large to keep: the batch's distinct keys read in key order.
      groups = new KeyMap<Row[]>(this.keyTypes);
      const keys: Value[][] = [];
      for (let i = 0; i < n; i++) {
        if (this.memo !== undefined && signs[i]! < 0) continue;
        const key = this.keyOf(rows[i]!);
        if (key !== null && groups.indexOf(key) < 0) {
          groups.add(key, []);
          keys.push(key);
        }
      }
      keys.sort((x, y) => compareKeys(x, y, this.keyTypes));
      for (const key of keys) groups.set(key, this.rowsByIndex(key));
    }
    const out = emptyChanges();
    const memo = this.memo === undefined ? undefined : new MemoBatch(this.memo, this.leftTypes, this.rightTypes);
    for (let i = 0; i < n; i++) {
      const left = rows[i]!;
      const sign = signs[i]!;
      if (memo !== undefined && sign < 0) {
        for (const right of memo.takeAll(left)) {
          out.rows.push(concatRows(left, right));
          out.signs.push(sign);
        }
        continue;
      }
      const key = this.keyOf(left);
      const group = key === null ? undefined : groups.get(key);
      let matched = 0;
      if (group !== undefined) {
        for (const candidate of group) {
          const right = this.match(left, candidate);
          if (right === null) continue;
          matched++;
          out.rows.push(concatRows(left, right));
          out.signs.push(sign);
          memo?.put(left, right);
        }
      }
      if (matched === 0 && this.outer) {
        out.rows.push(concatRows(left, this.padding));
        out.signs.push(sign);
        memo?.put(left, this.padding);
      }
    }
    memo?.write();
    return out;
  }
}

/** One batch's view of the memo: left row -> the right rows it joined with (counts), written at the end. */
class MemoBatch {
  private readonly entries: KeyMap<{ rights: Row[]; counts: number[]; stored: number[] }>;

  constructor(
    private readonly table: StateTable,
    leftTypes: readonly DataType[],
    private readonly rightTypes: readonly DataType[],
  ) {
    this.entries = new KeyMap(leftTypes);
  }

  private entry(left: Row): { rights: Row[]; counts: number[]; stored: number[] } {
    const found = this.entries.get(left);
    if (found !== undefined) return found;
    const entry = { rights: [] as Row[], counts: [] as number[], stored: [] as number[] };
    const width = left.length;
    for (const stored of this.table.scan({ prefix: left as Value[] })) {
      entry.rights.push(stored.slice(width, width + this.rightTypes.length));
      const count = Number(stored[width + this.rightTypes.length] as bigint);
      entry.counts.push(count);
      entry.stored.push(count);
    }
    this.entries.add(left as Value[], entry);
    return entry;
  }

  /** Removes one joined right row of `left` and returns it; undefined: `left` emitted nothing. */
  take(left: Row): Row | undefined {
    const entry = this.entry(left);
    for (let j = 0; j < entry.rights.length; j++) {
      if (entry.counts[j]! > 0) {
        entry.counts[j]!--;
        return entry.rights[j]!;
      }
    }
    return undefined;
  }

  /** Removes one of each right row `left` joined with (a lookup by index emits several) and returns them. */
  takeAll(left: Row): Row[] {
    const entry = this.entry(left);
    const taken: Row[] = [];
    for (let j = 0; j < entry.rights.length; j++) {
      if (entry.counts[j]! > 0) {
        entry.counts[j]!--;
        taken.push(entry.rights[j]!);
      }
    }
    return taken;
  }

  put(left: Row, right: Row): void {
    const entry = this.entry(left);
    for (let j = 0; j < entry.rights.length; j++) {
      if (rowsIdentical(entry.rights[j]!, right, this.rightTypes)) {
        entry.counts[j]!++;
        return;
      }
    }
    entry.rights.push(right);
    entry.counts.push(1);
    entry.stored.push(0);
  }

  write(): void {
    for (let e = 0; e < this.entries.size; e++) {
      const left = this.entries.keys[e]!;
      const entry = this.entries.values[e]!;
      for (let j = 0; j < entry.rights.length; j++) {
        const count = entry.counts[j]!;
        if (count === entry.stored[j]) continue;
        const stateRow = [...left, ...entry.rights[j]!, BigInt(count)];
        if (count > 0) this.table.insert(stateRow);
        else this.table.delete(stateRow);
      }
    }
  }
}

/** Two right rows with the same values (NULL equal to NULL). */
function rowsIdentical(a: Row, b: Row, types: readonly DataType[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (x === null || y === null || compareValues(x, y, types[i]!) !== 0) return false;
  }
  return true;
}

/** Key tuples in key order. */
function compareKeys(x: readonly Value[], y: readonly Value[], types: readonly DataType[]): number {
  for (let k = 0; k < types.length; k++) {
    const c = compareValues(x[k]!, y[k]!, types[k]!);
    if (c !== 0) return c;
  }
  return 0;
}
