// The reader of a postgres-cdc table: logical replication with pgoutput from one upstream table
// into the table's rows, upserted and deleted by primary key.
//
// Offsets: one partition (0) whose offset is the end LSN of the last upstream transaction applied;
// 0 means the initial snapshot is not complete. The source manager commits it with the epoch
// (`source-offsets/<id>`) like a Kafka offset.
//
// First start (offset 0): the replication connection creates the slot with an exported snapshot;
// a second connection reads the table in a REPEATABLE READ transaction under that snapshot, after
// a truncate of the oxbow table (so a snapshot cut short by a crash is read again whole), all at
// offset 0; the last rows carry the slot's consistent point as the offset. Then, and at every
// restart, START_REPLICATION from the offset: each transaction is delivered at its Commit with its
// end LSN (a large one in parts at the previous offset before that), a transaction whose commit
// record starts below the offset (Begin's final LSN) is skipped. The slot's flush position (Standby
// Status Update) moves only to an LSN the source manager reports committed (`committed`; with
// `--durability remote`, once a complete remote checkpoint holds its epoch), so the WAL oxbow still
// needs is kept and nothing oxbow holds is kept longer than needed; while idle with
// everything committed it follows the server's keepalives. A stream silent for half of
// `keepalive.timeout.ms` is asked for a reply (a Standby Status Update with reply requested); one
// silent for all of it (a hung server, a dead network path) is closed and reconnected.
//
// Trouble (a lost connection, PostgreSQL restarting, a dropped slot) is reported to the listener
// (`oxbow_catalog.source_errors`) and retried with back-off from the committed offset; an upstream
// schema change that removes or retypes a declared column stops the table's stream with an error
// (an added column is ignored: the oxbow table keeps its declared columns).

import type { RelationDef } from '../../../sql/catalog.js';
import type { Epoch } from '../../../sql/epoch.js';
import { compareValues } from '../../../sql/compare.js';
import { parseValue } from '../../../sql/text-format.js';
import type { DataType } from '../../../sql/types.js';
import type { Row, Value } from '../../../sql/value.js';
import { formatTypeName } from '../../catalog/type-names.js';
import type { PartitionOffsets, SourceListener, SourceReader, StartupResolver } from '../source.js';
import { cdcOptions, type CdcOptions } from './cdc-options.js';
import { formatLsn, parseLsn, PgClient, PgError, quoteIdent, quoteLiteral } from './pg-client.js';
import { decodePgOutput, decodeReplication, standbyStatus, UNCHANGED_TOAST, type RelationColumn, type TupleValue } from './pgoutput.js';

/** Change kinds a CDC reader hands over beside 1 (upsert) and -1 (delete by key). */
export const CHANGE_TRUNCATE = 2;
/** An upsert whose UNCHANGED_TOAST values come from the row stored under its key. */
export const CHANGE_UPSERT_MERGE = 3;
export { UNCHANGED_TOAST };

/** The listener side a CDC reader needs: changes in the relation's layout up to offset `next`. */
export interface CdcChangesListener extends SourceListener {
  changes(rows: Row[], kinds: number[], next: bigint): Promise<void>;
}

const SNAPSHOT_BATCH_ROWS = 4096;
/** A transaction with more changes than this is handed over in parts (memory stays bounded). */
const TRANSACTION_PART_ROWS = 16_384;
const STATUS_INTERVAL_MS = 10_000;
const MONITOR_INTERVAL_MS = 1000;
const MAX_BACKOFF_MS = 10_000;

/** Type OIDs of declared oxbow types (by formatTypeName) for the schema check of Relation messages. */
function upstreamTypeName(oid: number): string | undefined {
  return TYPE_NAMES.get(oid);
}
const TYPE_NAMES = new Map<number, string>([
  [16, 'boolean'], [17, 'bytea'], [20, 'bigint'], [21, 'smallint'], [23, 'integer'], [25, 'text'], [114, 'json'], [700, 'real'], [701, 'double precision'],
  [1042, 'character'], [1043, 'character varying'], [1082, 'date'], [1083, 'time without time zone'], [1114, 'timestamp without time zone'],
  [1184, 'timestamp with time zone'], [1186, 'interval'], [1700, 'numeric'], [2950, 'uuid'], [3802, 'jsonb'],
  [1000, 'boolean[]'], [1005, 'smallint[]'], [1007, 'integer[]'], [1016, 'bigint[]'], [1009, 'text[]'], [1015, 'character varying[]'], [1021, 'real[]'], [1022, 'double precision[]'], [1231, 'numeric[]'], [1001, 'bytea[]'],
]);

interface TableMapping {
  /** Per upstream column: the oxbow column it fills, or -1. */
  readonly targets: Int32Array;
  /** Per upstream column: its key flag. */
  readonly keys: boolean[];
}

export class PostgresCdcReader implements SourceReader, StartupResolver {
  private readonly options: CdcOptions;
  private readonly types: DataType[];
  private readonly keyColumns: readonly number[];
  private stopped = false;
  private running: Promise<void> | undefined;
  private listener: CdcChangesListener | undefined;
  private stream: PgClient | undefined;
  /** End LSN of the last transaction handed to the listener (0: snapshot incomplete). */
  private delivered = 0n;
  /** The highest LSN the manager reports committed: the slot's flush position. */
  private confirmed = 0n;
  /** The walsender's position from the stream (keepalives, XLogData), not the server's WAL end. */
  private serverEnd = 0n;
  private inTransaction = false;
  /** Upstream relation OID of the table, once its Relation message arrived. */
  private mapping: { oid: number; map: TableMapping } | undefined;
  private halted: string | undefined;

  /** `--durability remote`: offsets committed locally, by epoch, waiting for a remote checkpoint. */
  private awaitingCheckpoint: { epoch: Epoch; lsn: bigint }[] = [];

  constructor(
    private readonly relation: RelationDef,
    /** The epoch of the last complete remote checkpoint (`--durability remote`), else undefined. */
    private readonly remoteCheckpointEpoch: () => Epoch | undefined = () => undefined,
  ) {
    this.options = cdcOptions(relation.options ?? {});
    this.types = relation.columns.map((column) => column.type);
    this.keyColumns = relation.primaryKey;
  }

  startOffsets(): Promise<Map<number, bigint>> {
    return Promise.resolve(new Map([[0, 0n]]));
  }

  start(resume: PartitionOffsets, listener: SourceListener): Promise<void> {
    this.listener = listener as CdcChangesListener;
    this.delivered = resume.get(0) ?? 0n;
    this.confirmed = this.delivered;
    this.running = this.run();
    return Promise.resolve();
  }

  /**
   * The manager committed `epoch` holding offset `offsets[0]`: the slot may release WAL below it,
   * at once with local durability, with `--durability remote` once a remote checkpoint holds it.
   */
  committed(offsets: ReadonlyMap<number, bigint>, epoch: Epoch): void {
    const lsn = offsets.get(0) ?? 0n;
    if (lsn <= this.confirmed) return;
    if (this.remoteCheckpointEpoch() !== undefined) {
      this.awaitingCheckpoint.push({ epoch, lsn });
      this.confirmCheckpointed();
      return;
    }
    this.confirmed = lsn;
    this.sendStatus(false);
  }

  /** Confirms the offsets a complete remote checkpoint now holds (checked as they come and every second). */
  private confirmCheckpointed(): void {
    const checkpointed = this.remoteCheckpointEpoch();
    if (checkpointed === undefined || this.awaitingCheckpoint.length === 0) return;
    let lsn = this.confirmed;
    let held = 0;
    while (held < this.awaitingCheckpoint.length && this.awaitingCheckpoint[held]!.epoch <= checkpointed) lsn = this.awaitingCheckpoint[held++]!.lsn;
    if (held === 0) return;
    this.awaitingCheckpoint = this.awaitingCheckpoint.slice(held);
    if (lsn <= this.confirmed) return;
    this.confirmed = lsn;
    this.sendStatus(false);
  }

  private sendStatus(replyRequested: boolean): void {
    const stream = this.stream;
    if (stream === undefined || stream.closed || this.confirmed === 0n) return;
    // Idle with everything delivered committed: nothing of ours lies below the server's end.
    const flushed = !this.inTransaction && this.delivered === this.confirmed && this.serverEnd > this.confirmed ? this.serverEnd : this.confirmed;
    try {
      stream.sendCopyData(standbyStatus(flushed, flushed, replyRequested));
    } catch {
      // The stream is gone; the next session reports from the committed offset.
    }
  }

  private async run(): Promise<void> {
    let backoff = 250;
    while (!this.stopped && this.halted === undefined) {
      const started = Date.now();
      try {
        await this.session();
      } catch (error) {
        if (this.stopped || this.halted !== undefined) return;
        const message = error instanceof Error ? error.message : String(error);
        this.listener!.trouble(`postgres-cdc ${this.options.schema}.${this.options.table}: ${message}`);
      }
      this.stream?.close();
      this.stream = undefined;
      if (this.stopped || this.halted !== undefined) return;
      if (Date.now() - started > 30_000) backoff = 250;
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }

  /** One replication connection: the snapshot if still due, then the stream until it ends. */
  private async session(): Promise<void> {
    const stream = await PgClient.connect({ ...this.options.connect, replication: true });
    this.stream = stream;
    if (this.stopped) return;
    if (this.delivered === 0n) await this.snapshot(stream);
    if (this.stopped) return;
    this.mapping = undefined;
    this.inTransaction = false;
    let ended: (error: PgError | undefined) => void = () => {};
    const end = new Promise<PgError | undefined>((resolve) => (ended = resolve));
    let failure: Error | undefined;
    const onData = (payload: Buffer): void => {
      if (failure !== undefined) return;
      try {
        this.receive(stream, payload);
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
        stream.close();
        ended(undefined);
      }
    };
    await stream.startCopyBoth(
      `START_REPLICATION SLOT ${quoteIdent(this.options.slot)} LOGICAL ${formatLsn(this.delivered)} (proto_version '1', publication_names ${quoteLiteral(quoteIdent(this.options.publication))})`,
      onData,
      (error) => ended(error ?? new PgError('the replication stream ended', '08006')),
    );
    this.listener!.recovered();
    const timer = setInterval(() => this.sendStatus(false), STATUS_INTERVAL_MS);
    const keepaliveMs = this.options.keepaliveTimeoutMs;
    const liveness = setInterval(() => {
      if (stream.isPaused) return;
      const silentMs = Date.now() - stream.lastReceivedAt;
      if (silentMs >= keepaliveMs) stream.abort(new PgError(`no message on the replication stream within ${keepaliveMs} ms (keepalive.timeout.ms)`, '08006'));
      else if (silentMs >= keepaliveMs / 2) this.sendStatus(true);
    }, Math.max(50, Math.floor(keepaliveMs / 4)));
    const monitor = this.monitorWalEnd();
    try {
      const error = await end;
      if (failure !== undefined) throw failure;
      if (!this.stopped && error !== undefined) throw error;
    } finally {
      clearInterval(timer);
      clearInterval(liveness);
      monitor.stop();
    }
  }

  /**
   * The server's current WAL end (`pg_current_wal_lsn()`) every second on a connection of its own:
   * the high watermark, so `source_partitions.lag` is the bytes oxbow has not committed yet. The
   * stream's own positions only say how far the walsender has read.
   */
  private monitorWalEnd(): { stop(): void } {
    let stopped = false;
    let client: PgClient | undefined;
    void (async () => {
      while (!stopped && !this.stopped) {
        try {
          client ??= await PgClient.connect(this.options.connect);
          if (stopped) break;
          const lsn = parseLsn((await client.query('SELECT pg_current_wal_lsn()')).rows[0]![0]!);
          this.listener!.highWatermark(0, lsn);
          this.confirmCheckpointed();
        } catch {
          // The stream reports trouble; the monitor tries again with a new connection.
          client?.close();
          client = undefined;
        }
        await new Promise((resolve) => setTimeout(resolve, MONITOR_INTERVAL_MS));
      }
      client?.close();
    })();
    return {
      stop: () => {
        stopped = true;
        client?.close();
      },
    };
  }

  /** Creates the slot with an exported snapshot and reads the table under it. */
  private async snapshot(stream: PgClient): Promise<void> {
    const slot = this.options.slot;
    const existing = await stream.query(`SELECT active FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(slot)}`);
    // A slot without a committed snapshot is left from a start cut short: its snapshot is gone.
    if (existing.rows.length > 0) await stream.query(`DROP_REPLICATION_SLOT ${quoteIdent(slot)} WAIT`);
    const created = await stream.query(`CREATE_REPLICATION_SLOT ${quoteIdent(slot)} LOGICAL pgoutput (SNAPSHOT 'export')`);
    const consistentPoint = parseLsn(created.rows[0]![1]!);
    const snapshotName = created.rows[0]![2]!;
    const reader = await PgClient.connect(this.options.connect);
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      await reader.query(`SET TRANSACTION SNAPSHOT ${quoteLiteral(snapshotName)}`);
      const listener = this.listener!;
      const empty: Row = new Array(this.types.length).fill(null);
      await listener.changes([empty], [CHANGE_TRUNCATE], 0n);
      const columns = this.relation.columns.map((column) => quoteIdent(column.name)).join(', ');
      let rows: Row[] = [];
      let kinds: number[] = [];
      let waiting: Promise<void> = Promise.resolve();
      await reader.queryEach(`SELECT ${columns} FROM ${quoteIdent(this.options.schema)}.${quoteIdent(this.options.table)}`, (values) => {
        const row: Row = new Array(values.length);
        for (let i = 0; i < values.length; i++) row[i] = this.convert(values[i]!, i);
        rows.push(row);
        kinds.push(1);
        if (rows.length >= SNAPSHOT_BATCH_ROWS) {
          reader.pause(true);
          waiting = listener.changes(rows, kinds, 0n).then(() => reader.pause(false));
          rows = [];
          kinds = [];
        }
      });
      await waiting;
      await reader.query('COMMIT');
      await listener.changes(rows, kinds, consistentPoint);
      this.delivered = consistentPoint;
    } finally {
      reader.close();
    }
  }

  private convert(text: string | null, column: number): Value {
    if (text === null) return null;
    return parseValue(text, this.types[column]!);
  }

  // The transaction being received, delivered at its Commit.
  private rows: Row[] = [];
  private kinds: number[] = [];
  /** The transaction being received was applied before (a restart streams from before its end). */
  private skipping = false;

  private receive(stream: PgClient, payload: Buffer): void {
    const message = decodeReplication(payload);
    if (message === undefined) return;
    // How far the walsender has read and sent (never past a commit it has not sent yet): where an
    // idle stream's flush position may go. The high watermark is the monitor's.
    if (message.walEnd > this.serverEnd) this.serverEnd = message.walEnd;
    if (message.tag === 'keepalive') {
      if (message.replyRequested) this.sendStatus(false);
      return;
    }
    const change = decodePgOutput(message.data);
    switch (change.tag) {
      case 'begin':
        this.inTransaction = true;
        this.rows = [];
        this.kinds = [];
        // Its commit record starts below the offset: applied before (its end is at or below it).
        this.skipping = change.finalLsn < this.delivered;
        return;
      case 'relation':
        if (change.schema === this.options.schema && change.name === this.options.table) this.mapping = { oid: change.oid, map: this.mapColumns(change.columns) };
        return;
      case 'insert':
        if (!this.skipping && change.oid === this.mapping?.oid) this.push(this.rowOf(change.tuple), 1);
        return;
      case 'update': {
        if (this.skipping || change.oid !== this.mapping?.oid) return;
        const row = this.rowOf(change.tuple);
        if (change.old !== undefined) {
          // The key changed (REPLICA IDENTITY DEFAULT sends the old key only then) or FULL: delete the old key.
          const old = this.rowOf(change.old);
          if (this.keyColumns.some((index) => old[index] === null || row[index] === null || compareValues(old[index]!, row[index]!, this.types[index]!) !== 0)) this.push(old, -1);
        }
        this.push(row, row.includes(UNCHANGED_TOAST as unknown as Value) ? CHANGE_UPSERT_MERGE : 1);
        return;
      }
      case 'delete':
        if (!this.skipping && change.oid === this.mapping?.oid) this.push(this.rowOf(change.old), -1);
        return;
      case 'truncate':
        if (!this.skipping && this.mapping !== undefined && change.oids.includes(this.mapping.oid)) this.push(new Array(this.types.length).fill(null), CHANGE_TRUNCATE);
        return;
      case 'commit': {
        this.inTransaction = false;
        const rows = this.rows;
        const kinds = this.kinds;
        this.rows = [];
        this.kinds = [];
        if (this.skipping || change.endLsn <= this.delivered) return;
        this.delivered = change.endLsn;
        stream.pause(true);
        void this.listener!.changes(rows, kinds, change.endLsn).then(() => stream.pause(false));
        return;
      }
      default:
        return;
    }
  }

  private push(row: Row, kind: number): void {
    this.rows.push(row);
    this.kinds.push(kind);
    if (this.rows.length >= TRANSACTION_PART_ROWS) {
      // A large transaction goes over in parts at the previous offset: a crash before its Commit
      // replays it from its start, and whole row images by key make that land on the same rows.
      const rows = this.rows;
      const kinds = this.kinds;
      this.rows = [];
      this.kinds = [];
      this.stream?.pause(true);
      void this.listener!.changes(rows, kinds, this.delivered).then(() => this.stream?.pause(false));
    }
  }

  /** A tuple in the relation's layout (declared columns only). */
  private rowOf(tuple: TupleValue[]): Row {
    const targets = this.mapping!.map.targets;
    const row: Row = new Array(this.types.length).fill(null);
    for (let i = 0; i < tuple.length && i < targets.length; i++) {
      const target = targets[i]!;
      if (target < 0) continue;
      const value = tuple[i]!;
      row[target] = value === UNCHANGED_TOAST ? (UNCHANGED_TOAST as unknown as Value) : this.convert(value, target);
    }
    return row;
  }

  /**
   * The upstream columns of a Relation message against the declared ones: every declared column
   * must be there with the type it had at CREATE (a dropped, renamed or retyped column halts the
   * stream); columns added upstream are not read.
   */
  private mapColumns(columns: readonly RelationColumn[]): TableMapping {
    const targets = new Int32Array(columns.length).fill(-1);
    const byName = new Map(columns.map((column, index) => [column.name, index]));
    const declared = this.relation.columns;
    for (let index = 0; index < declared.length; index++) {
      const column = declared[index]!;
      const at = byName.get(column.name);
      const upstream = at === undefined ? undefined : upstreamTypeName(columns[at]!.typeOid);
      const expected = formatTypeName(column.type).replace(/\(.*?\)/g, '');
      const stringy = (name: string | undefined): boolean => name === 'text' || name === 'character varying' || name === 'character';
      const compatible = upstream === undefined || upstream === expected || (stringy(upstream) && stringy(expected)) || (upstream.endsWith('[]') && expected.endsWith('[]') && stringy(upstream.slice(0, -2)) && stringy(expected.slice(0, -2)));
      if (at === undefined || !compatible) {
        const reason = at === undefined ? `column "${column.name}" no longer exists upstream` : `column "${column.name}" changed type upstream to ${upstream}`;
        this.halt(`upstream schema change of ${this.options.schema}.${this.options.table}: ${reason}; the table's stream stopped (recreate the table to read the new schema)`);
        throw new Error(reason);
      }
      targets[at] = index;
    }
    return { targets, keys: columns.map((column) => column.key) };
  }

  private halt(message: string): void {
    this.halted = message;
    this.listener!.trouble(message);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stream?.close();
    await this.running;
  }

  /** The table was dropped: its slot upstream goes too, so the server keeps no WAL for it. */
  async dropped(): Promise<void> {
    try {
      const client = await PgClient.connect({ ...this.options.connect, replication: true });
      try {
        // The walsender of the stopped stream may take a moment to let the slot go.
        for (let attempt = 0; attempt < 50; attempt++) {
          const slot = await client.query(`SELECT active FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(this.options.slot)}`);
          if (slot.rows.length === 0) return;
          if (slot.rows[0]![0] === 'f') {
            await client.query(`DROP_REPLICATION_SLOT ${quoteIdent(this.options.slot)}`);
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        client.close();
      }
    } catch (error) {
      process.stderr.write(`oxbow: postgres-cdc: dropping replication slot "${this.options.slot}" failed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
}
