// The batch executor's window onto tables: TableAccess over the StateStore for user relations, and
// over generated rows for system relations (pg_catalog, information_schema).
//
// Reads: a statement reads one snapshot, the epoch committed when it started (PostgreSQL's
// statement snapshot), so `INSERT INTO t SELECT * FROM t` never sees its own rows and a reader
// never sees another statement's uncommitted writes. `get` (primary-key lookups for conflict
// checks) sees the statement's own writes too. Rows written before an ALTER TABLE ADD COLUMN are
// shorter than the current column list; they are padded with NULL here.

import type { RelationDef } from '../../sql/catalog.js';
import { epochToMillis, lastEpochAtMillis, type Epoch } from '../../sql/epoch.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Row, Value } from '../../sql/value.js';
import type { RowVersion, StateStore, StateTable, StateTableSchema } from '../../storage/state-table.js';
import type { SharedScan, TableAccess } from './index.js';
import type { BatchWorkers } from './batch-workers.js';
import { indexEntry, indexStateTable } from '../catalog/secondary-index.js';
import { formatValue } from '../../sql/text-format.js';
import { compareValues } from '../../sql/compare.js';
import type { ForeignKeys } from './foreign-keys.js';

/** Records the changes of relations that materialized views read (the stream manager implements it). */
export interface ChangeCapture {
  /** True when some view reads the relation (so its changes must be recorded). */
  captures(relationId: number): boolean;
  record(relationId: number, row: Row, sign: number): void;
}

/**
 * Sources that store no rows: their state table holds only positions (offsets, generator units)
 * and reads replay the rows below them. The connectors implement it (connectors/replay-reader.ts);
 * without it every relation reads its own rows.
 */
export interface SourceReplays {
  /** True for a source whose rows are replayed rather than stored. */
  isReplayed(relation: RelationDef): boolean;
  /** About how many rows a replayed source holds (the units it emitted). */
  estimatedRows(table: StateTable, relation: RelationDef): number;
  /** One statement's replays: `table` is a relation's state table, `snapshot` the statement's epoch. */
  forStatement(table: (relation: RelationDef) => StateTable, snapshot: Epoch): StatementReplays;
}

/** The replays one statement reads; the row methods are called only for replayed relations. */
export interface StatementReplays {
  /** Before a plan runs: fetches what it reads of sources that replay a remote log. */
  prepare(plan: unknown, signal?: AbortSignal, parameters?: readonly Value[]): Promise<void> | undefined;
  /** prepare() for relations named directly, each read whole. */
  prepareRelations(relations: readonly RelationDef[], signal?: AbortSignal): Promise<void>;
  /** A view's backfill of a replayed source: its rows at the snapshot, a fetched batch at a time. */
  batches(relation: RelationDef, signal?: AbortSignal): AsyncIterable<{ readonly rows: Row[] }>;
  rows(relation: RelationDef, epoch: Epoch): Iterable<Row>;
  versions(relation: RelationDef, oldest: Epoch, to: Epoch): Iterable<RowVersion>;
  row(relation: RelationDef, rowId: bigint, epoch: Epoch): Row | undefined;
}

/** Without the connectors: a relation that replays its rows cannot be read. */
export const NO_REPLAYS: SourceReplays = {
  isReplayed: (relation) => relation.kind === 'source' && relation.replayed === true,
  estimatedRows: (table) => table.stats().keys,
  forStatement: () => {
    throw new SqlError(SqlState.internalError, 'oxbow internal assertion: a replayed source without the connectors');
  },
};

export interface SystemRowSource {
  /** Rows of a system relation, generated for this statement. */
  systemRows(relation: RelationDef): Row[];
}

/** Monotonic hidden row ids: time-based so that they keep growing across restarts. */
export class RowIdAllocator {
  private last = 0n;
  private sinceClockRead = 0;
  next(): bigint {
    // Reading the clock per row costs more than the id; every 4096 ids is enough to keep ids
    // above any id handed out before a restart (2^20 ids per millisecond of wall time).
    if (this.sinceClockRead-- <= 0) {
      this.sinceClockRead = 4096;
      const candidate = BigInt(Date.now()) << 20n;
      if (candidate > this.last) {
        this.last = candidate;
        return this.last;
      }
    }
    this.last += 1n;
    return this.last;
  }
}

/**
 * The state table schema of each relation definition, made once: definitions are immutable (ALTER
 * makes a new one), and the store takes the schema it already holds for a table without comparing
 * it again (a new object per statement cost a one-row INSERT's check about 4 us under load).
 */
const schemas = new WeakMap<RelationDef, StateTableSchema>();

/** The state table of a table's or materialized view's rows, with the relation's retention. */
export function stateTableOf(store: StateStore, relation: RelationDef): StateTable {
  let schema = schemas.get(relation);
  if (schema === undefined) {
    schema = {
      tableId: relation.id,
      columnTypes: relation.columns.map((column) => column.type),
      primaryKey: relation.primaryKey,
      ...(relation.retentionMs === undefined ? {} : { retentionMs: relation.retentionMs }),
    };
    schemas.set(relation, schema);
  }
  return store.table(schema);
}

/** About how many rows a relation holds (RocksDB's key estimate; a replayed source: the units it emitted). */
export function estimatedRows(store: StateStore, relation: RelationDef, replays: SourceReplays = NO_REPLAYS): number {
  const table = stateTableOf(store, relation);
  return replays.isReplayed(relation) ? replays.estimatedRows(table, relation) : table.stats().keys;
}

/** Types whose text form is one per value, so equal text means equal values (a hash key). */
const CANONICAL_TEXT = new Set(['int2', 'int4', 'int8', 'text', 'varchar', 'bpchar', 'name', 'uuid', 'bool', 'date', 'timestamp', 'timestamptz', 'oid']);

function sameValue(a: Value, b: Value, type: RelationDef['columns'][number]['type']): boolean {
  if (a === null || b === null) return a === b;
  return compareValues(a, b, type) === 0;
}

function pushRow(map: Map<number, Row[]>, id: number, row: Row): void {
  const rows = map.get(id);
  if (rows === undefined) map.set(id, [row]);
  else rows.push(row);
}

function padded(rows: Iterable<Row>, width: number): Iterable<Row> {
  return {
    *[Symbol.iterator]() {
      for (const row of rows) {
        if (row.length >= width) yield row;
        else {
          const copy = row.slice();
          while (copy.length < width) copy.push(null);
          yield copy;
        }
      }
    },
  };
}

export class StoreTableAccess implements TableAccess {
  /** Rows written to tables with CHECK constraints, by relation id, for the check before commit. */
  readonly checkedWrites = new Map<number, { readonly relation: RelationDef; readonly rows: Row[] }>();
  /** State tables by relation id, so per-row writes do not rebuild the table schema. */
  private readonly tables = new Map<number, StateTable>();
  /** The statement's reads of sources that store no rows (opened on first use). */
  private statementReplays: StatementReplays | undefined;

  constructor(
    private readonly store: StateStore,
    private readonly system: SystemRowSource,
    private readonly rowIds: RowIdAllocator,
    /** The statement's snapshot: the epoch committed when it started. */
    private readonly snapshotEpoch: Epoch,
    /** Records the changes of relations that materialized views read (executor/stream/). */
    private readonly capture?: ChangeCapture,
    /** The secondary indexes of a table, kept in step with its writes (secondary-index.ts). */
    private readonly indexesOf: (relationId: number) => readonly RelationDef[] = () => [],
    /** Sources that store no rows (connectors/replay-reader.ts). */
    private readonly sourceReplays: SourceReplays = NO_REPLAYS,
    /** FOREIGN KEY constraints of the statement's catalog, checked before it commits (foreign-keys.ts). */
    readonly foreignKeys: ForeignKeys | undefined = undefined,
  ) {}

  private get replays(): StatementReplays {
    this.statementReplays ??= this.sourceReplays.forStatement((relation) => this.userTable(relation), this.snapshotEpoch);
    return this.statementReplays;
  }

  // ---- FOREIGN KEY (foreign-keys.ts): what a statement wrote and removed, and latest-state lookups.

  /** Child rows written and parent rows removed or re-keyed, for verifyForeignKeys. */
  readonly foreignKeyWrites = { written: new Map<number, Row[]>(), removed: new Map<number, Row[]>(), rewritten: new Set<number>() };

  private recordForeignKeys(keys: ForeignKeys, relation: RelationDef, row: Row | undefined): void {
    if (row !== undefined && keys.byChild.has(relation.id)) pushRow(this.foreignKeyWrites.written, relation.id, row);
    const referencing = keys.byParent.get(relation.id);
    if (referencing === undefined) return;
    if (row !== undefined) this.foreignKeyWrites.rewritten.add(relation.id);
    const old = this.get(relation, relation.primaryKey.map((index) => (row ?? [])[index]!));
    if (old === undefined) return;
    const changed = row === undefined || referencing.some((key) => key.constraint.references!.columns.some((column) => !sameValue(old[column] ?? null, row[column] ?? null, relation.columns[column]!.type)));
    if (changed) pushRow(this.foreignKeyWrites.removed, relation.id, old);
  }

  hasRowWith(relation: RelationDef, columns: readonly number[], values: readonly Value[]): boolean {
    if (columns.length === relation.primaryKey.length && relation.primaryKey.every((column) => columns.includes(column))) {
      return this.get(relation, relation.primaryKey.map((column) => values[columns.indexOf(column)]!)) !== undefined;
    }
    const index = this.indexOver(relation, columns);
    if (index !== undefined) {
      const prefix = index.index.indexOn!.columns.map((column) => values[columns.indexOf(column)]!);
      return !index.table.scan({ prefix, limit: 1 })[Symbol.iterator]().next().done;
    }
    return this.rowsWith(relation, columns, values).length > 0;
  }

  rowsWith(relation: RelationDef, columns: readonly number[], values: readonly Value[]): Row[] {
    const index = this.indexOver(relation, columns);
    const rows: Row[] = [];
    if (index !== undefined) {
      const width = index.index.indexOn!.columns.length;
      const prefix = index.index.indexOn!.columns.map((column) => values[columns.indexOf(column)]!);
      for (const entry of index.table.scan({ prefix })) {
        const row = this.get(relation, entry.slice(width));
        if (row !== undefined) rows.push(row);
      }
      return rows;
    }
    for (const row of padded(this.userTable(relation).scan({}), relation.columns.length)) {
      if (columns.every((column, position) => sameValue(row[column] ?? null, values[position]!, relation.columns[column]!.type))) rows.push(row);
    }
    return rows;
  }

  /**
   * The rows matching any of `keys` (values in `columns`), each with the index of the key it
   * matched: lookups through a stored index over those columns, else one scan of the table (keys
   * hashed by their text for types whose text is canonical, compared one by one otherwise).
   */
  rowsWithAny(relation: RelationDef, columns: readonly number[], keys: readonly (readonly Value[])[]): { row: Row; key: number }[] {
    const found: { row: Row; key: number }[] = [];
    if (keys.length === 0) return found;
    if (this.indexOver(relation, columns) !== undefined || keys.length === 1) {
      keys.forEach((key, index) => {
        for (const row of this.rowsWith(relation, columns, key)) found.push({ row, key: index });
      });
      return found;
    }
    const types = columns.map((column) => relation.columns[column]!.type);
    const hashed = types.every((type) => CANONICAL_TEXT.has(type.name));
    const byText = new Map<string, number[]>();
    if (hashed) {
      keys.forEach((key, index) => {
        const text = key.map((value, position) => formatValue(value!, types[position]!)).join('\u0000');
        const list = byText.get(text);
        if (list === undefined) byText.set(text, [index]);
        else list.push(index);
      });
    }
    for (const row of padded(this.userTable(relation).scan({}), relation.columns.length)) {
      if (columns.some((column) => (row[column] ?? null) === null)) continue;
      if (hashed) {
        const text = columns.map((column, position) => formatValue(row[column]!, types[position]!)).join('\u0000');
        for (const index of byText.get(text) ?? []) found.push({ row, key: index });
        continue;
      }
      keys.forEach((key, index) => {
        if (columns.every((column, position) => sameValue(row[column] ?? null, key[position]!, types[position]!))) found.push({ row, key: index });
      });
    }
    return found;
  }

  /** A stored index whose columns are exactly `columns` (in any order). */
  private indexOver(relation: RelationDef, columns: readonly number[]): { readonly index: RelationDef; readonly table: StateTable } | undefined {
    return this.indexesOfTable(relation).find(({ index }) => index.indexOn!.columns.length === columns.length && index.indexOn!.columns.every((column) => columns.includes(column)));
  }

  /** Index state tables of a table, by relation id (resolved once per statement). */
  private readonly indexTables = new Map<number, readonly { readonly index: RelationDef; readonly table: StateTable }[]>();

  private indexesOfTable(relation: RelationDef): readonly { readonly index: RelationDef; readonly table: StateTable }[] {
    let found = this.indexTables.get(relation.id);
    if (found === undefined) {
      found = this.indexesOf(relation.id).map((index) => ({ index, table: indexStateTable(this.store, relation, index) }));
      this.indexTables.set(relation.id, found);
    }
    return found;
  }

  /** The index entries of `old` out, those of `row` in; a UNIQUE index refuses a second row with equal non-NULL values (23505). */
  private maintainIndexes(relation: RelationDef, old: Row | undefined, row: Row | undefined): void {
    for (const { index, table } of this.indexesOfTable(relation)) {
      if (old !== undefined) table.delete(indexEntry(relation, index, old));
      if (row === undefined) continue;
      const entry = indexEntry(relation, index, row);
      const width = index.indexOn!.columns.length;
      if (index.indexOn!.unique === true && !entry.slice(0, width).includes(null)) {
        const taken = !table.scan({ prefix: entry.slice(0, width), limit: 1 })[Symbol.iterator]().next().done;
        if (taken) {
          const names = index.indexOn!.columns.map((column) => relation.columns[column]!.name).join(', ');
          const values = index.indexOn!.columns.map((column) => formatValue(row[column]!, relation.columns[column]!.type)).join(', ');
          throw new SqlError(SqlState.uniqueViolation, `duplicate key value violates unique constraint "${index.name}"`, {
            detail: `Key (${names})=(${values}) already exists.`,
          });
        }
      }
      table.insert(entry);
    }
  }

  indexKeys(relation: RelationDef, index: RelationDef, prefix: Row, options: { readonly asOf?: Epoch }): Iterable<Row> | undefined {
    let epoch = this.snapshotEpoch;
    if (options.asOf !== undefined) {
      this.checkWindow(relation, options.asOf);
      epoch = options.asOf < this.snapshotEpoch ? options.asOf : this.snapshotEpoch;
      // An AS OF before the index was built (or beyond its retained history): the table answers.
      if (epoch < this.store.readableWindow(index.id).oldest) return undefined;
    }
    const width = index.indexOn!.columns.length;
    const entries = indexStateTable(this.store, relation, index).scan({ prefix, epoch });
    return {
      *[Symbol.iterator]() {
        for (const entry of entries) yield entry.slice(width);
      },
    };
  }

  /**
   * Before a plan runs: fetches the replay of every source that stores no rows and replays a
   * remote log the plan scans, up to the statement's snapshot, so the synchronous scans below read
   * it (AS OF an older epoch reads a prefix of it).
   */
  prepare(plan: unknown, signal?: AbortSignal, parameters?: readonly Value[]): Promise<void> | undefined {
    return this.sourceReplays === NO_REPLAYS ? undefined : this.replays.prepare(plan, signal, parameters);
  }

  /** prepare() for relations named directly (COPY source TO STDOUT): each read whole. */
  prepareRelations(relations: readonly RelationDef[], signal?: AbortSignal): Promise<void> {
    if (!relations.some((relation) => this.sourceReplays.isReplayed(relation))) return Promise.resolve();
    return this.replays.prepareRelations(relations, signal);
  }

  /** A view's backfill of a source that stores no rows: its replay at the snapshot, a batch at a time. */
  replayBatches(relation: RelationDef, signal?: AbortSignal): AsyncIterable<{ readonly rows: Row[] }> {
    return this.replays.batches(relation, signal);
  }

  private userTable(relation: RelationDef): StateTable {
    if (relation.kind !== 'table' && relation.kind !== 'materialized_view' && relation.kind !== 'source') {
      throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is not a table`);
    }
    return this.stateTable(relation);
  }

  private stateTable(relation: RelationDef): StateTable {
    let table = this.tables.get(relation.id);
    if (table === undefined) {
      table = stateTableOf(this.store, relation);
      this.tables.set(relation.id, table);
    }
    return table;
  }

  private checkWindow(relation: RelationDef, epoch: Epoch): void {
    const window = this.store.readableWindow(relation.id);
    if (epoch < window.oldest) {
      const oldest = new Date(epochToMillis(window.oldest)).toISOString();
      const latest = new Date(epochToMillis(window.latest)).toISOString();
      throw new SqlError(SqlState.snapshotTooOld, `cannot read "${relation.name}" as of ${new Date(epochToMillis(epoch)).toISOString()}: it is readable from ${oldest} to ${latest}`, {
        detail: 'Older versions were never written (the relation is younger) or are no longer retained.',
        hint: "Time travel reaches back as far as the object's retention: WITH (retention = ...), by default --time-travel-retention. See oxbow_catalog.time_travel.",
      });
    }
  }

  scan(relation: RelationDef, options: { readonly asOf?: Epoch }): Iterable<Row> {
    if (relation.kind === 'system') return this.system.systemRows(relation);
    const table = this.userTable(relation);
    let epoch = this.snapshotEpoch;
    if (options.asOf !== undefined) {
      this.checkWindow(relation, options.asOf);
      epoch = options.asOf < this.snapshotEpoch ? options.asOf : this.snapshotEpoch;
    }
    // A source that stores no rows: the events below its position at that epoch, replayed.
    if (this.sourceReplays.isReplayed(relation)) return this.replays.rows(relation, epoch);
    return padded(table.scan({ epoch }), relation.columns.length);
  }

  /**
   * The workers batch queries share at --parallelism > 1 on RocksDB (batch-workers.ts; the session
   * sets them): `sharedScan` hands them scans of large relations.
   */
  batchWorkers: BatchWorkers | undefined;

  /**
   * The table id and epoch at which worker threads read the rows `scan` with these options reads
   * (parallel-aggregate.ts), after the same window checks; undefined when only `scan` can read them:
   * no workers, a source that stores no rows, or range deletes (deleteBelow) RocksDB does not hold yet.
   */
  sharedScan(relation: RelationDef, options: { readonly asOf?: Epoch }): SharedScan | undefined {
    const workers = this.batchWorkers;
    if (workers === undefined) return undefined;
    if (relation.kind !== 'table' && relation.kind !== 'materialized_view') return undefined;
    if (this.sourceReplays.isReplayed(relation)) return undefined;
    // An MvccStateTable (on RocksDB: the store the workers were given) without unapplied range deletes.
    const table = this.userTable(relation) as Partial<{ cleanings: readonly unknown[] }>;
    if (table.cleanings === undefined || table.cleanings.length > 0) return undefined;
    let epoch = this.snapshotEpoch;
    if (options.asOf !== undefined) {
      this.checkWindow(relation, options.asOf);
      epoch = options.asOf < this.snapshotEpoch ? options.asOf : this.snapshotEpoch;
    }
    // As the table's scan resolves it: committed epochs only; below the window, scan() raises the error.
    const window = this.store.readableWindow(relation.id);
    if (epoch < window.oldest) return undefined;
    return { workers, tableId: relation.id, epoch: epoch > window.latest ? window.latest : epoch };
  }

  versions(relation: RelationDef, from: Epoch, to: Epoch): Iterable<RowVersion> {
    if (relation.kind === 'system') {
      const rows = this.system.systemRows(relation);
      return rows.map((row) => ({ row, validFrom: 0n, validTo: null }));
    }
    // A period that starts before the readable window but reaches into it returns the versions
    // of the window: the relation has nothing older to show (it did not exist, or retention
    // dropped it, which the window bounds). A period wholly before the window is an error.
    const window = this.store.readableWindow(relation.id);
    this.checkWindow(relation, to);
    if (from < window.oldest) from = window.oldest;
    const width = relation.columns.length;
    if (this.sourceReplays.isReplayed(relation)) return this.replays.versions(relation, window.oldest, to);
    const versions = this.userTable(relation).versions(from, to);
    return {
      *[Symbol.iterator]() {
        for (const version of versions) {
          if (version.row.length >= width) yield version;
          else yield { ...version, row: [...version.row, ...new Array<null>(width - version.row.length).fill(null)] };
        }
      },
    };
  }

  /** A point read in the statement's snapshot (or AS OF), as scan() would see the row: index lookups. */
  lookup(relation: RelationDef, key: Row, options: { readonly asOf?: Epoch }): Row | undefined {
    if (relation.kind === 'system') return this.system.systemRows(relation).find((row) => relation.primaryKey.every((column, i) => row[column] === key[i]));
    let epoch = this.snapshotEpoch;
    if (options.asOf !== undefined) {
      this.checkWindow(relation, options.asOf);
      epoch = options.asOf < this.snapshotEpoch ? options.asOf : this.snapshotEpoch;
    }
    if (this.sourceReplays.isReplayed(relation)) return typeof key[0] === 'bigint' ? this.replays.row(relation, key[0], epoch) : undefined;
    const row = this.userTable(relation).get(key, epoch);
    if (row === undefined || row.length >= relation.columns.length) return row;
    return [...row, ...new Array<null>(relation.columns.length - row.length).fill(null)];
  }

  get(relation: RelationDef, key: Row): Row | undefined {
    if (relation.kind === 'system') return undefined;
    const row = this.userTable(relation).get(key);
    if (row === undefined || row.length >= relation.columns.length) return row;
    return [...row, ...new Array<null>(relation.columns.length - row.length).fill(null)];
  }

  insert(relation: RelationDef, row: Row): void {
    const table = this.writable(relation);
    if (this.foreignKeys !== undefined) this.recordForeignKeys(this.foreignKeys, relation, row);
    if (this.indexesOfTable(relation).length > 0) {
      // An insert is an upsert by key: the replaced row's index entries go.
      this.maintainIndexes(relation, this.get(relation, relation.primaryKey.map((index) => row[index]!)), row);
    }
    if (relation.checks !== undefined && relation.checks.length > 0) {
      // CHECK constraints are verified before the statement commits (engine/check-constraints.ts verifyChecks).
      let written = this.checkedWrites.get(relation.id);
      if (written === undefined) this.checkedWrites.set(relation.id, (written = { relation, rows: [] }));
      written.rows.push(row);
    }
    if (this.capture?.captures(relation.id) === true) {
      // An insert is an upsert by key: a replaced row is a delete of the old one.
      const old = this.get(relation, relation.primaryKey.map((index) => row[index]!));
      if (old !== undefined) this.capture.record(relation.id, old, -1);
      this.capture.record(relation.id, row, 1);
    }
    table.insert(row);
  }

  delete(relation: RelationDef, row: Row): void {
    const table = this.writable(relation);
    if (this.foreignKeys?.byParent.has(relation.id) === true) {
      const old = this.get(relation, relation.primaryKey.map((index) => row[index]!));
      if (old !== undefined) pushRow(this.foreignKeyWrites.removed, relation.id, old);
    }
    if (this.indexesOfTable(relation).length > 0) {
      const old = this.get(relation, relation.primaryKey.map((index) => row[index]!));
      if (old !== undefined) this.maintainIndexes(relation, old, undefined);
    }
    if (this.capture?.captures(relation.id) === true) {
      const old = this.get(relation, relation.primaryKey.map((index) => row[index]!));
      if (old !== undefined) this.capture.record(relation.id, old, -1);
    }
    table.delete(row);
  }

  private writable(relation: RelationDef): StateTable {
    if (relation.kind === 'source') {
      throw new SqlError(SqlState.wrongObjectType, `cannot change source "${relation.name}"`, { hint: 'A source is written by its connector only.' });
    }
    if (relation.kind !== 'table') {
      throw new SqlError(SqlState.wrongObjectType, `cannot change relation "${relation.name}"`, {
        detail: relation.kind === 'view' ? 'Views that do not select from a single table or view are not automatically updatable.' : undefined,
      });
    }
    return this.stateTable(relation);
  }

  nextRowId(_relation: RelationDef): bigint {
    return this.rowIds.next();
  }

  epochAt(timestampMicros: number): Epoch {
    return lastEpochAtMillis(Math.floor(timestampMicros / 1000));
  }
}
