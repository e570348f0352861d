// StreamHashJoin: the incremental symmetric hash join (RisingWave's and Flink's). Each side's rows
// live in its state table by equi-key (`key ++ row ++ count`, `++ degree` on a side whose output
// depends on whether its rows match), so a change on one side costs one prefix scan of the other
// side's key group and emits exactly the joined changes:
//
//   for each changed row r (sign s) of side S, key k:
//     for each row o of the other side in group k passing the residual (count c):
//       emit s * (r joined with o), c times                              -- inner / outer
//       degree(o) += s; 0 -> 1: retract o's NULL-padded row (outer), emit o (semi), retract o (anti)
//                       1 -> 0: the reverse
//     m = the number of those matches
//     S preserved (outer) and m = 0: emit s * (r NULL-padded); semi: m > 0: emit s * r; anti: m = 0
//     count(r) += s, degree(r) = m
//
// A row with a NULL in a plain (not IS NOT DISTINCT FROM) key never matches: its output is fixed
// (NULL-padded, or the anti join's row), emitted with its sign, and it keeps no state. When both
// sides change in one epoch, the left changes join the right state as it was, then the right
// changes join the new left state: ΔL ⋈ R + L' ⋈ ΔR = L' ⋈ R' - L ⋈ R. A residual that fails with
// an error does not match (the error is recorded for the view), the same on insert and delete.
//
// A side over an append-only source (`rowIds`, plan version 4: the input carries source row ids)
// is stored by (key, row id): `key ++ row ++ id ++ 1 [++ degree]`. Its rows only arrive, each with
// a new id, so an insert is one blind put: no read of an existing count (the point read per row
// that made a large side's cost grow with its size), and its rows skip the row cache (nothing reads
// them back by key). Its cache holds groups that were probed, and while the side is small, all.

import type { Row, Value } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import type { StateTable } from '../../storage/state-table.js';
import type { HashJoinOperator } from '../../planner/stream/stream-plan.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { KeyMap } from '../expr/row-hash.js';
import { concatRows, nullRow } from '../batch/join-output.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import { cacheableTypes, emptyGroup, JOIN_COUNT, JOIN_DEGREE, JOIN_ID, JOIN_ROW, joinStride, JoinSideCache, pushRow, type JoinGroup } from './join-cache.js';
import type { StreamContext } from './stream-context.js';
import { movedKeyColumn, toTableOrder, WatermarkCleaner } from './state-cleaning.js';
import type { StreamNode } from './stream-node.js';

/** One own-side row's state within a key group: its count and degree before / after the changes. */
interface Entry {
  readonly row: Row;
  count: number;
  degree: number;
  readonly existed: boolean;
  /** Its position in the side's cached group (-1: not there yet, or the group is not cached). */
  readonly position: number;
}

/** A probe of a complete side's key it does not hold: no rows (never written to). */
const NO_ROWS: JoinGroup = emptyGroup();

export class StreamHashJoinNode implements StreamNode {
  private readonly tables: readonly StateTable[];
  private readonly keyEvaluators: readonly (readonly Evaluator[])[];
  private readonly keyTypes: readonly DataType[];
  private readonly rowTypes: readonly (readonly DataType[])[];
  private readonly widths: readonly number[];
  private readonly nullSafe: readonly boolean[];
  private readonly residual: Evaluator | undefined;
  private readonly degrees: readonly boolean[];
  /** Per side: stored by (key, source row id) (`HashJoinOperator.rowIds`): inserts only, no own-row reads. */
  private readonly rowIds: readonly boolean[];
  /** Inner and outer joins output joined pairs; semi and anti output left rows. */
  private readonly pairs: boolean;
  /** Per side: its unmatched rows are output NULL-padded. */
  private readonly preserved: readonly boolean[];
  private readonly semi: boolean;
  private readonly anti: boolean;
  private readonly paddings: readonly Row[];
  /** Per side: its cached key groups (join-cache.ts), or undefined when its types are not cacheable. */
  private readonly caches: readonly (JoinSideCache | undefined)[];
  /** Per side: slots per row in its groups (`joinStride`). */
  private readonly strides: readonly number[];
  /** The other side's rows whose degree a group's changes moved (positions; `dirtyMarks` flags them): written once at the group's end. */
  /** Under EMIT ON WINDOW CLOSE, by an equi-key following the watermarks of both sides: deletes the closed keys' rows (state-cleaning.ts). */
  private readonly cleaner: WatermarkCleaner | undefined;
  /** The key column the state tables key first (cleaned by watermark, plan version 5), or -1: keys in join key order. */
  private readonly movedKey: number;
  private readonly dirtyPositions: number[] = [];
  private dirtyMarks = new Uint8Array(64);

  constructor(
    plan: HashJoinOperator,
    private readonly context: StreamContext,
  ) {
    this.tables = plan.stateTables.map((declaration) => context.stateTable(declaration));
    this.keyEvaluators = plan.keys.map((keys) => keys.map(compile));
    this.keyTypes = plan.keys[0]!.map((key) => key.type);
    this.rowTypes = plan.inputs.map((input) => input.columns.map((column) => column.type));
    this.widths = this.rowTypes.map((types) => types.length);
    this.nullSafe = plan.nullSafe;
    this.residual = plan.residual === undefined ? undefined : compile(plan.residual);
    this.degrees = plan.degrees;
    this.rowIds = plan.rowIds ?? [false, false];
    this.strides = this.rowIds.map(joinStride);
    this.rowIds.forEach((byId, side) => {
      if (byId) this.tables[side]!.writeAround?.();
    });
    const type = plan.joinType;
    this.pairs = type === 'inner' || type === 'left' || type === 'right' || type === 'full';
    this.preserved = [type === 'left' || type === 'full', type === 'right' || type === 'full'];
    this.semi = type === 'semi';
    this.anti = type === 'anti';
    this.paddings = this.widths.map((width) => nullRow(width));
    const keysCacheable = cacheableTypes(this.keyTypes);
    const cleanedColumn = plan.clean === undefined ? -1 : plan.clean.key;
    this.caches = this.rowTypes.map((types, side) => (keysCacheable && cacheableTypes(types) ? new JoinSideCache(context.groupCaches, types, this.keyTypes.length, this.rowIds[side], cleanedColumn) : undefined));
    this.cleaner = plan.clean === undefined ? undefined : new WatermarkCleaner(plan.clean, this.keyTypes[plan.clean.key]!, context);
    this.movedKey = movedKeyColumn(plan.clean, this.tables[0]!);
  }

  /** `values` (a join key, then anything after it; rotated in place) in the state tables' key order. */
  private tableKey(values: Value[]): Value[] {
    return this.movedKey < 0 ? values : toTableOrder(values, this.movedKey);
  }

  /** A join key as a prefix of the state tables' keys (a rotated copy when the key order moved). */
  private keyPrefix(key: Value[]): Value[] {
    return this.movedKey < 0 ? key : toTableOrder([...key], this.movedKey);
  }

  /** Deletes both sides' rows (and cached groups) of the keys whose window the watermarks closed since the last clean. */
  private cleanClosed(cleaner: WatermarkCleaner): void {
    const bound = cleaner.advance();
    if (bound === null) return;
    const width = this.keyTypes.length;
    for (let side = 0; side < 2; side++) {
      const table = this.tables[side]!;
      const cache = this.caches[side];
      if (cleaner.ranged(table)) {
        // Keyed by the window first: one range delete, and the cached closed groups dropped.
        table.deleteBelow!([bound]);
        cache?.dropClosed((value) => cleaner.closes(value, bound));
        continue;
      }
      for (const row of cleaner.closedRows(table, bound)) {
        table.delete(row);
        if (cache !== undefined) cache.drop(cache.mapKey(row.slice(0, width)));
      }
    }
  }

  /** The open epoch was aborted: its writes are gone from the state, so the caches go too. */
  discard(): void {
    for (const cache of this.caches) cache?.reset();
    this.cleaner?.reset();
  }

  /** The view was dropped. */
  dispose(): void {
    for (const cache of this.caches) cache?.dispose();
  }

  apply(slot: number, changes: ChangeBatch): ChangeBatch {
    const out = emptyChanges();
    if (changes.rows.length > 0) this.applySide(slot, changes, out);
    return out;
  }

  /** Both sides' changes of one epoch: the left's against the old right state, then the right's against the new left state. */
  applyAll(changesPerSlot: readonly (ChangeBatch | undefined)[]): ChangeBatch {
    const out = emptyChanges();
    for (let side = 0; side < 2; side++) {
      const changes = changesPerSlot[side];
      if (changes !== undefined && changes.rows.length > 0) this.applySide(side, changes, out);
    }
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }

  private applySide(side: number, changes: ChangeBatch, out: ChangeBatch): void {
    if (this.cleaner !== undefined) this.cleanClosed(this.cleaner);
    // Before any group is touched (the state must hold every write the caches hold).
    this.loadWhole(0);
    this.loadWhole(1);
    // Group the changed rows by key (rows whose key can never match are output at once).
    const evaluators = this.keyEvaluators[side]!;
    const keyCount = evaluators.length;
    const runtime = this.context.runtime;
    const byId = this.rowIds[side]!;
    if (byId && changes.ids === undefined) throw new SqlError(SqlState.internalError, 'a hash join side stored by source row id received rows without ids');
    const groups = new KeyMap<number[]>(this.keyTypes);
    // Each row's key is evaluated into one scratch array; a group's key is a copy of it, made once.
    const key: Value[] = new Array(keyCount);
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      if (byId && changes.signs[i]! < 0) throw new SqlError(SqlState.internalError, 'a deletion reached a hash join side over an append-only input');
      let matchable = true;
      for (let k = 0; k < keyCount; k++) {
        let value: Value;
        try {
          value = evaluators[k]!(row, runtime);
        } catch (error) {
          this.context.recordError(error);
          value = null;
        }
        key[k] = value;
        if (value === null && !this.nullSafe[k]) matchable = false;
      }
      if (!matchable) {
        this.unmatched(side, row, changes.signs[i]!, out);
        continue;
      }
      const hash = groups.hash(key);
      const index = groups.indexOf(key, hash);
      if (index >= 0) groups.values[index]!.push(i);
      else groups.add(key.slice(), [i], hash);
    }
    // State writes wait until every group has been read (a scan after a write re-merges the buffer).
    const writes: Row[] = [];
    const otherWrites: Row[] = [];
    for (let g = 0; g < groups.size; g++) this.applyGroup(side, groups.keys[g]!, groups.values[g]!, changes, out, writes, otherWrites);
    // Both lists hold complete state rows (a side by row id gets inserts and degree updates only).
    this.write(this.tables[side]!, writes);
    this.write(this.tables[1 - side]!, otherWrites);
  }

  private write(table: StateTable, rows: readonly Row[]): void {
    for (const stateRow of rows) {
      // A trailing null marks a delete (the key columns are what it needs).
      if (stateRow[stateRow.length - 1] === null) table.delete(stateRow);
      else table.insert(stateRow);
    }
  }

  /** A row whose key never matches: NULL-padded (outer), itself (anti), or nothing. */
  private unmatched(side: number, row: Row, sign: number, out: ChangeBatch): void {
    if (this.preserved[side]) push(out, this.padded(side, row), sign, 1);
    else if (side === 0 && this.anti) push(out, row, sign, 1);
  }

  private padded(side: number, row: Row): Row {
    return side === 0 ? concatRows(row, this.paddings[1]!) : concatRows(this.paddings[0]!, row);
  }

  private applyGroup(side: number, key: Value[], indexes: readonly number[], changes: ChangeBatch, out: ChangeBatch, writes: Row[], otherWrites: Row[]): void {
    const other = 1 - side;
    const group = this.probe(other, key);
    const ownGroup = this.cachedGroup(side, key);
    const otherSlots = group.slots;
    const otherStride = this.strides[other]!;
    const otherSize = otherSlots.length / otherStride;
    if (this.dirtyMarks.length < otherSize) this.dirtyMarks = new Uint8Array(Math.max(otherSize, this.dirtyMarks.length * 2));
    const dirtyMarks = this.dirtyMarks;
    const dirtyPositions = this.dirtyPositions;
    // Left over only by a group that threw (its epoch is then aborted): not this group's rows.
    for (let d = 0; d < dirtyPositions.length; d++) dirtyMarks[dirtyPositions[d]!] = 0;
    dirtyPositions.length = 0;
    const otherHasDegree = this.degrees[other]!;
    const ownHasDegree = this.degrees[side]!;
    const residual = this.residual;
    const runtime = this.context.runtime;
    const byId = this.rowIds[side]!;
    const otherById = this.rowIds[other]!;
    const entries = !byId && indexes.length > 1 ? new KeyMap<Entry>(this.rowTypes[side]!) : undefined;
    let single: Entry | undefined;
    for (let n = 0; n < indexes.length; n++) {
      const i = indexes[n]!;
      const row = changes.rows[i]!;
      const sign = changes.signs[i]!;
      let matches = 0;
      for (let j = 0, at = 0; j < otherSize; j++, at += otherStride) {
        const count = otherSlots[at + JOIN_COUNT] as number;
        if (count <= 0) continue;
        const otherRow = otherSlots[at + JOIN_ROW] as Row;
        let joined: Row | undefined;
        if (residual !== undefined) {
          joined = side === 0 ? concatRows(row, otherRow) : concatRows(otherRow, row);
          let passes = false;
          try {
            passes = residual(joined, runtime) === true;
          } catch (error) {
            this.context.recordError(error);
          }
          if (!passes) continue;
        }
        matches += count;
        if (this.pairs) push(out, joined ?? (side === 0 ? concatRows(row, otherRow) : concatRows(otherRow, row)), sign, count);
        if (otherHasDegree) {
          const before = otherSlots[at + JOIN_DEGREE] as number;
          const after = before + sign;
          otherSlots[at + JOIN_DEGREE] = after;
          if (dirtyMarks[j] === 0) {
            dirtyMarks[j] = 1;
            dirtyPositions.push(j);
          }
          if (before <= 0 && after > 0) this.matchChanged(other, otherRow, count, 1, out);
          else if (before > 0 && after <= 0) this.matchChanged(other, otherRow, count, -1, out);
        }
      }
      if (this.preserved[side] && matches === 0) push(out, this.padded(side, row), sign, 1);
      else if (side === 0 && ((this.semi && matches > 0) || (this.anti && matches === 0))) push(out, row, sign, 1);
      if (byId) {
        // A new row (an insert with a new id): one blind put, and into the cached group if there is one.
        const id = changes.ids![i]!;
        const stateRow = keyAndRow(key, row, ownHasDegree ? 3 : 2);
        const end = key.length + row.length;
        stateRow[end] = id;
        stateRow[end + 1] = 1n;
        if (ownHasDegree) stateRow[end + 2] = BigInt(matches);
        writes.push(stateRow);
        if (ownGroup !== undefined) this.caches[side]!.append(ownGroup, row, 1, matches, id);
        continue;
      }
      // The row's own state.
      let entry: Entry | undefined;
      if (entries === undefined) entry = single = this.lookupEntry(side, key, row, ownGroup);
      else {
        const index = entries.indexOf(row);
        if (index >= 0) entry = entries.values[index]!;
        else {
          entry = this.lookupEntry(side, key, row, ownGroup);
          entries.add(row, entry);
        }
      }
      entry.count += sign;
      entry.degree = matches;
    }
    if (byId) {
      // Nothing to merge: every row was written above.
    } else if (entries === undefined) {
      this.entryWrite(key, single!, ownHasDegree, writes);
      if (ownGroup !== undefined) this.entryCache(side, ownGroup, single!);
    } else {
      for (let e = 0; e < entries.size; e++) {
        this.entryWrite(key, entries.values[e]!, ownHasDegree, writes);
        if (ownGroup !== undefined) this.entryCache(side, ownGroup, entries.values[e]!);
      }
    }
    if (ownGroup !== undefined) this.caches[side]!.compact(ownGroup);
    for (let d = 0; d < dirtyPositions.length; d++) {
      const j = dirtyPositions[d]!;
      dirtyMarks[j] = 0;
      const at = j * otherStride;
      const otherRow = otherSlots[at + JOIN_ROW] as Row;
      const count = BigInt(otherSlots[at + JOIN_COUNT] as number);
      const degree = BigInt(otherSlots[at + JOIN_DEGREE] as number);
      const stateRow = keyAndRow(key, otherRow, otherById ? 3 : 2);
      let end = key.length + otherRow.length;
      if (otherById) stateRow[end++] = otherSlots[at + JOIN_ID] as Value;
      stateRow[end] = count;
      stateRow[end + 1] = degree;
      otherWrites.push(stateRow);
    }
    dirtyPositions.length = 0;
  }

  /** Keeps a cached group equal to the state after an own row's write. */
  private entryCache(side: number, group: JoinGroup, entry: Entry): void {
    const position = entry.position;
    if (position >= 0) {
      const at = position * this.strides[side]!;
      const slots = group.slots;
      const before = slots[at + JOIN_COUNT] as number;
      slots[at + JOIN_COUNT] = entry.count;
      slots[at + JOIN_DEGREE] = entry.degree;
      if (before > 0 && entry.count <= 0) group.deleted++;
      else if (before <= 0 && entry.count > 0) group.deleted--;
    } else if (entry.count > 0) {
      this.caches[side]!.append(group, entry.row, entry.count, entry.degree);
    }
  }

  /**
   * The side's cached group of this key, if any; a complete side's missing key is a new empty group
   * (cached: the rows about to be written go into it). A side by row id needs no cached group to
   * write (it reads no own row), so once it holds more than `completeLoadRows` rows it stops being
   * complete instead of caching every key it is written (q7's bids: a group per price, never probed).
   * A key above every key of the side's state table (`prefixIsNew`: ascending keys, q4's new
   * auctions) is a new empty group too, cached with no read: the other side's next probe finds it;
   * but only while the side's cached groups are probed at least half as often as such groups are
   * made (q4's bids, written by auction id, are probed once per auction before its bids arrive:
   * their groups only took the budget the auctions' groups need).
   */
  private cachedGroup(side: number, key: Value[]): JoinGroup | undefined {
    const cache = this.caches[side];
    if (cache === undefined) return undefined;
    const mapKey = cache.mapKey(key);
    const group = cache.get(mapKey);
    if (group !== undefined) return group;
    if (cache.complete && this.rowIds[side] && cache.rows >= this.context.groupCaches.completeLoadRows) cache.complete = false;
    if (!cache.complete) {
      if (cache.probeHits * 2 < cache.groupsByWrite || this.tables[side]!.prefixIsNew?.(this.keyPrefix(key)) !== true) return undefined;
      cache.groupsByWrite++;
    }
    const created = emptyGroup();
    cache.put(mapKey, created, key);
    return created;
  }

  /** The other side's rows of a key: from the cache, or read from the state (and then cached). */
  private probe(side: number, key: Value[]): JoinGroup {
    const cache = this.caches[side];
    if (cache === undefined) return this.readGroup(side, key);
    const mapKey = cache.mapKey(key);
    const cached = cache.get(mapKey);
    if (cached !== undefined) {
      cache.probeHits++;
      return cached;
    }
    if (cache.complete) return NO_ROWS;
    const group = this.readGroup(side, key);
    // An empty group of a side stored by row id is not cached: its own rows are blind writes that
    // would only fill it (q4's bids of a new auction, which nothing probes again), and a key above
    // the table's key bound is read again with no seek.
    if (group.slots.length === 0 && this.rowIds[side]) return group;
    cache.put(mapKey, group, key);
    return group;
  }

  /** An own row's count and degree: from the cached group when there is one, else a point read. */
  private lookupEntry(side: number, key: Value[], row: Row, group: JoinGroup | undefined): Entry {
    if (group === undefined) return this.readEntry(side, key, row);
    const position = this.caches[side]!.find(group, row);
    const at = position * this.strides[side]!;
    const count = position < 0 ? 0 : (group.slots[at + JOIN_COUNT] as number);
    if (count <= 0) return { row, count: 0, degree: 0, existed: false, position };
    return { row, count, degree: group.slots[at + JOIN_DEGREE] as number, existed: true, position };
  }

  /**
   * At the first change since start (or an abort): loads a side whose state table has at most
   * `completeLoadRows` rows into its cache whole, which makes it complete.
   */
  private loadWhole(side: number): void {
    const cache = this.caches[side];
    if (cache === undefined || cache.loaded) return;
    cache.loaded = true;
    const keyWidth = this.keyTypes.length;
    const byId = this.rowIds[side]!;
    const rowEnd = keyWidth + this.widths[side]!;
    const at = rowEnd + (byId ? 1 : 0);
    const withDegree = this.degrees[side]!;
    const limit = this.context.groupCaches.completeLoadRows;
    const stateRows: Row[] = [];
    for (const stateRow of this.tables[side]!.scan({ limit: limit + 1 })) stateRows.push(stateRow);
    if (stateRows.length > limit) return;
    cache.clear();
    const groups = new Map<unknown, { key: Row; group: JoinGroup }>();
    for (const stateRow of stateRows) {
      const count = Number(stateRow[at] as bigint);
      if (count <= 0) continue;
      const key = stateRow.slice(0, keyWidth);
      const mapKey = cache.mapKey(key);
      let entry = groups.get(mapKey);
      if (entry === undefined) groups.set(mapKey, (entry = { key, group: emptyGroup() }));
      pushRow(entry.group, stateRow.slice(keyWidth, rowEnd), count, withDegree ? Number(stateRow[at + 1] as bigint) : 0, byId ? stateRow[rowEnd]! : undefined);
    }
    // Eviction while loading (a budget smaller than the side) leaves the side incomplete.
    cache.complete = true;
    for (const [mapKey, entry] of groups) cache.put(mapKey, entry.group, entry.key);
  }

  /**
   * A row of side `side` (count copies) got its first match (direction 1) or lost its last (-1):
   * its NULL-padded row leaves / comes back (outer); a semi join's row comes / leaves; an anti
   * join's row leaves / comes back.
   */
  private matchChanged(side: number, row: Row, count: number, direction: number, out: ChangeBatch): void {
    if (this.preserved[side]) push(out, this.padded(side, row), -direction, count);
    else if (side === 0 && this.semi) push(out, row, direction, count);
    else if (side === 0 && this.anti) push(out, row, -direction, count);
  }

  private entryWrite(key: Value[], entry: Entry, withDegree: boolean, writes: Row[]): void {
    if (entry.count > 0) {
      const stateRow = keyAndRow(key, entry.row, withDegree ? 2 : 1);
      const end = key.length + entry.row.length;
      stateRow[end] = BigInt(entry.count);
      if (withDegree) stateRow[end + 1] = BigInt(entry.degree);
      writes.push(stateRow);
    } else if (entry.existed) {
      // Deleted: the key columns identify it; the trailing null marks the delete.
      writes.push([...key, ...entry.row, null]);
    }
  }

  private readEntry(side: number, key: Value[], row: Row): Entry {
    const stored = this.tables[side]!.get(this.tableKey([...key, ...row]));
    if (stored === undefined) return { row, count: 0, degree: 0, existed: false, position: -1 };
    const at = key.length + this.widths[side]!;
    return { row, count: Number(stored[at] as bigint), degree: this.degrees[side] ? Number(stored[at + 1] as bigint) : 0, existed: true, position: -1 };
  }

  /** The rows of one key group of one side, with counts and degrees (and row ids on a side by row id). */
  private readGroup(side: number, key: Value[]): JoinGroup {
    const group = emptyGroup();
    const keyWidth = key.length;
    const byId = this.rowIds[side]!;
    const rowEnd = keyWidth + this.widths[side]!;
    const at = rowEnd + (byId ? 1 : 0);
    const withDegree = this.degrees[side]!;
    // `prefix` returns exactly the key group's rows.
    for (const stateRow of this.tables[side]!.scan({ prefix: this.keyPrefix(key) })) {
      const count = Number(stateRow[at] as bigint);
      if (count <= 0) continue;
      pushRow(group, stateRow.slice(keyWidth, rowEnd), count, withDegree ? Number(stateRow[at + 1] as bigint) : 0, byId ? stateRow[rowEnd]! : undefined);
    }
    return group;
  }
}

/**
 * A state row `key ++ row ++ tail` at its exact length, the tail's `tail` slots for the caller to
 * fill: a spread (`[...key, ...row, id, 1n]`) keeps V8's spare capacity, 200 bytes against 96 for
 * six values, held in the state table's buffer until the epoch is written.
 */
function keyAndRow(key: readonly Value[], row: Row, tail: number): Row {
  const out: Row = new Array<Value>(key.length + row.length + tail);
  let at = 0;
  for (let i = 0; i < key.length; i++) out[at++] = key[i]!;
  for (let i = 0; i < row.length; i++) out[at++] = row[i]!;
  return out;
}

function push(out: ChangeBatch, row: Row, sign: number, copies: number): void {
  for (let c = 0; c < copies; c++) {
    out.rows.push(row);
    out.signs.push(sign);
  }
}
