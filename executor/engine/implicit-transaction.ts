// The rollback of a transaction block's rows: the implicit block of a multi-statement simple Query
// (PostgreSQL's rule: "multiple statements in a single Query message are executed as a single
// transaction, unless explicit transaction control commands are included": when a statement
// fails, the earlier statements of the message are rolled back) and an explicit BEGIN block's
// ROLLBACK. Settings roll back through SessionSettings' transaction; data through this undo log.
//
// oxbow commits every writing statement at its own epoch (a later statement of the message reads
// the earlier ones' rows at the committed epoch), so a rollback is a compensating epoch: for every
// row a statement of the block wrote, the row as it was before the block's first write to it. The
// log keeps, per (table, primary key), that first before-image and the block's last after-image;
// the rollback restores a row only while it still holds that after-image, so a change another
// session made to the row in between is kept, not overwritten (PostgreSQL's row lock would have
// made that session wait). Views over the tables follow the compensating epoch as any other
// change; other sessions, sinks and `FOR SYSTEM_TIME AS OF` can see the epochs in between.
// DDL is not undone (the catalog has no undo): a table the block created stays, a row whose table
// was dropped in between is not restored. The log holds at most `undoLimits.rows` rows (about
// 300 bytes each): a block that writes more (a bulk INSERT ... SELECT or COPY in a multi-statement
// string) stops logging, and its rollback leaves every row it wrote, with a WARNING saying so.

import type { RelationDef } from '../../sql/catalog.js';
import type { Row } from '../../sql/value.js';
import type { DataType } from '../../sql/types.js';
import { KeyMap, keysEqual } from '../expr/row-hash.js';
import type { EngineCore } from './engine-core.js';
import { StoreTableAccess } from '../batch/table-access.js';

/** The undo log's bound (tests lower it). */
export const undoLimits = { rows: 100_000 };

interface UndoEntry {
  /** The row before the block's first write to this key (undefined: there was none). */
  readonly before: Row | undefined;
  /** The row the block's last write left (undefined: deleted). */
  after: Row | undefined;
}

interface RelationLog {
  readonly relationId: number;
  readonly keyTypes: readonly DataType[];
  readonly entries: KeyMap<UndoEntry>;
}

interface PendingWrite {
  readonly relation: RelationDef;
  readonly key: Row;
  readonly before: Row | undefined;
  readonly after: Row | undefined;
}

/**
 * A SAVEPOINT of an explicit block: the block's log up to it is kept apart (`below`), the writes
 * after it go to a new layer, so ROLLBACK TO writes back only the rows changed since the mark.
 * `state` is the session's own state at the mark (settings, DDL count), handed back by ROLLBACK TO.
 */
interface Savepoint {
  readonly name: string;
  readonly below: Map<number, RelationLog>;
  readonly state: unknown;
}

/** The rows a transaction block (implicit or explicit) wrote: committed statements' writes, and the running statement's. */
export class UndoLog {
  /** The writes since the newest savepoint (since the block began when there is none). */
  private relations = new Map<number, RelationLog>();
  /** The block's savepoints, oldest first. */
  private readonly savepoints: Savepoint[] = [];
  /** The running statement's writes, published once its epoch committed (a failed one's are dropped). */
  private pending: PendingWrite[] = [];
  /** Statements of the block that changed data. */
  statementsWritten = 0;
  /** Rows logged (a key written twice counts twice: a bound, not a size). */
  private rows = 0;
  /** More than undoLimits.rows rows were written: nothing is logged any more, a rollback undoes nothing. */
  overflowed = false;

  record(relation: RelationDef, key: Row, before: Row | undefined, after: Row | undefined): void {
    if (this.overflowed) return;
    if (++this.rows > undoLimits.rows) {
      this.overflowed = true;
      this.pending = [];
      this.relations.clear();
      return;
    }
    this.pending.push({ relation, key, before, after });
  }

  /** The running statement committed: its writes join the block's log. */
  publish(): void {
    if (this.overflowed) this.statementsWritten++;
    if (this.pending.length === 0) return;
    for (const write of this.pending) {
      let log = this.relations.get(write.relation.id);
      if (log === undefined) {
        const types = keyTypes(write.relation);
        log = { relationId: write.relation.id, keyTypes: types, entries: new KeyMap(types) };
        this.relations.set(write.relation.id, log);
      }
      const entry = log.entries.get(write.key);
      if (entry === undefined) log.entries.add(write.key, { before: write.before, after: write.after });
      else entry.after = write.after;
    }
    this.pending = [];
    this.statementsWritten++;
  }

  /** The running statement did not commit (or was DDL, which is not undone): its writes are forgotten. */
  discardPending(): void {
    this.pending = [];
  }

  get isEmpty(): boolean {
    return this.relations.size === 0 && this.savepoints.every((savepoint) => savepoint.below.size === 0);
  }

  /** SAVEPOINT name: a mark in the log (a name used before is shadowed until released, as in PostgreSQL). */
  markSavepoint(name: string, state: unknown): void {
    this.savepoints.push({ name, below: this.relations, state });
    this.relations = new Map();
  }

  /** The newest savepoint of that name, or -1. */
  findSavepoint(name: string): number {
    for (let index = this.savepoints.length - 1; index >= 0; index--) if (this.savepoints[index]!.name === name) return index;
    return -1;
  }

  /** RELEASE: the savepoint and every later one are forgotten; their writes stay in the block's log. */
  releaseSavepoint(index: number): void {
    const merged = this.savepoints[index]!.below;
    for (let later = index + 1; later < this.savepoints.length; later++) mergeInto(merged, this.savepoints[later]!.below);
    mergeInto(merged, this.relations);
    this.relations = merged;
    this.savepoints.length = index;
  }

  /**
   * ROLLBACK TO: the rows written since the savepoint written back (one compensating epoch); later
   * savepoints are forgotten, this one stays. Returns the session state saved at the mark.
   */
  async rollBackToSavepoint(index: number, core: EngineCore, access: () => StoreTableAccess): Promise<{ readonly restored: number; readonly skipped: number; readonly state: unknown }> {
    const savepoint = this.savepoints[index]!;
    const since = new Map<number, RelationLog>();
    for (let later = index + 1; later < this.savepoints.length; later++) mergeInto(since, this.savepoints[later]!.below);
    mergeInto(since, this.relations);
    this.savepoints.length = index + 1;
    this.relations = new Map();
    const counts = this.overflowed ? { restored: 0, skipped: 0 } : await writeBack(since, core, access);
    return { ...counts, state: savepoint.state };
  }

  /**
   * Writes the compensating epoch: each logged row back to its before-image where it still holds
   * the block's after-image. Returns how many rows were restored and how many were skipped
   * (changed by another session since, or their table is gone).
   */
  async rollBack(core: EngineCore, access: () => StoreTableAccess): Promise<{ readonly restored: number; readonly skipped: number }> {
    const all = new Map<number, RelationLog>();
    for (const savepoint of this.savepoints) mergeInto(all, savepoint.below);
    mergeInto(all, this.relations);
    const counts = await writeBack(all, core, access);
    this.relations.clear();
    this.savepoints.length = 0;
    return counts;
  }
}

/** Merges a later layer's entries into an earlier one: per key the earliest before-image, the latest after-image. */
function mergeInto(earlier: Map<number, RelationLog>, later: Map<number, RelationLog>): void {
  for (const [relationId, log] of later) {
    const target = earlier.get(relationId);
    if (target === undefined) {
      const copy: RelationLog = { relationId, keyTypes: log.keyTypes, entries: new KeyMap(log.keyTypes) };
      for (let position = 0; position < log.entries.size; position++) {
        const entry = log.entries.values[position]!;
        copy.entries.add(log.entries.keys[position]!, { before: entry.before, after: entry.after });
      }
      earlier.set(relationId, copy);
      continue;
    }
    for (let position = 0; position < log.entries.size; position++) {
      const key = log.entries.keys[position]!;
      const entry = log.entries.values[position]!;
      const existing = target.entries.get(key);
      if (existing === undefined) target.entries.add(key, { before: entry.before, after: entry.after });
      else existing.after = entry.after;
    }
  }
}

/**
 * Writes the compensating epoch: each logged row back to its before-image where it still holds
 * the block's after-image. Returns how many rows were restored and how many were skipped
 * (changed by another session since, or their table is gone).
 */
async function writeBack(relations: Map<number, RelationLog>, core: EngineCore, access: () => StoreTableAccess): Promise<{ readonly restored: number; readonly skipped: number }> {
  if (relations.size === 0) return { restored: 0, skipped: 0 };
  return core.writeLock.run(async () => {
    const tables = access();
    const catalog = core.catalog.snapshot;
    let restored = 0;
    let skipped = 0;
    const reinserts: { readonly relation: RelationDef; readonly row: Row }[] = [];
    try {
      // Every touched row out first, then the before-images in: the result is the state before
      // the block, which satisfied every UNIQUE index, so no re-insert collides half-way.
      for (const log of relations.values()) {
        const relation = catalog.relationById(log.relationId);
        if (relation === undefined || relation.kind !== 'table') {
          skipped += log.entries.size;
          continue;
        }
        const types = relation.columns.map((column) => column.type);
        for (let position = 0; position < log.entries.size; position++) {
          const entry = log.entries.values[position]!;
          const current = tables.get(relation, log.entries.keys[position]!);
          if (!sameRow(current, entry.after, types)) {
            skipped++;
            continue;
          }
          if (current !== undefined) tables.delete(relation, current);
          if (entry.before !== undefined) reinserts.push({ relation, row: padded(entry.before, relation.columns.length) });
          restored++;
        }
      }
      for (const { relation, row } of reinserts) tables.insert(relation, row);
      await core.commitDurable();
    } catch (error) {
      core.store.abort();
      throw error;
    }
    relations.clear();
    return { restored, skipped };
  });
}

/**
 * The session's table access inside a transaction block: every insert and delete is logged with the
 * row it replaced (read before the write, the statement's own earlier writes included).
 */
export class RecordingTableAccess extends StoreTableAccess {
  private log: UndoLog | undefined;

  recordInto(log: UndoLog): this {
    this.log = log;
    return this;
  }

  override insert(relation: RelationDef, row: Row): void {
    const log = this.log;
    // Past its bound the log takes nothing: the write costs no read of the row it replaces.
    if (log === undefined || log.overflowed) return super.insert(relation, row);
    const key = relation.primaryKey.map((index) => row[index]!);
    const before = this.get(relation, key);
    super.insert(relation, row);
    log.record(relation, key, before, row);
  }

  override delete(relation: RelationDef, row: Row): void {
    const log = this.log;
    if (log === undefined || log.overflowed) return super.delete(relation, row);
    const key = relation.primaryKey.map((index) => row[index]!);
    const before = this.get(relation, key);
    super.delete(relation, row);
    log.record(relation, key, before, undefined);
  }
}

function keyTypes(relation: RelationDef): DataType[] {
  return relation.primaryKey.map((index) => relation.columns[index]!.type);
}

function padded(row: Row, width: number): Row {
  if (row.length >= width) return row;
  const copy = row.slice();
  while (copy.length < width) copy.push(null);
  return copy;
}

/** Both absent, or equal column by column (a shorter row's missing columns are NULL). */
function sameRow(a: Row | undefined, b: Row | undefined, types: readonly DataType[]): boolean {
  if (a === undefined || b === undefined) return a === b;
  const width = types.length;
  return keysEqual(padded(a, width).slice(0, width), padded(b, width).slice(0, width), types);
}
