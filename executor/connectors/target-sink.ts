// Runs a sink whose target is not Kafka (sink-target.ts: blackhole, postgres/): each round the
// committed changes since the epoch the target holds, written in one atomic step of the target.
//
// Progress: the target's own record is the truth (PostgreSQL's progress row commits with the
// rows). The store keeps a floor in `sink-progress/<sink id>`, at or below it: written before the
// first delivery (the epoch of the contents sent) and moved up to the epoch delivered at most every
// FLOOR_INTERVAL_MS. The sink holds its relation's history from the floor (StateStore.holdHistory;
// at start before anything commits), so however long the target is away, or oxbow with it, the
// changes it has yet to receive stay readable past the retention (plus up to FLOOR_INTERVAL_MS).
// The floor is only as good as the target's acknowledgement: a target found below it (deliveries
// it acknowledged and lost, or an older sink's progress of the same name) gets the relation's
// contents, with a sink_errors row saying so (PostgreSQL commits synchronously for that reason).
//
// A sink AS query reads its change log instead (sink-log.ts: its dataflow's changes in epoch
// order, the entries the target acknowledged trimmed in the floor's commit): a delivery costs its
// changes, not the relation's size, and no history is held. A sink FROM a table, source or view
// reads that relation's versions (sink-changes.ts), which cost a scan of the relation.
//
// A direct sink (sink-target.ts, `deliversDirectly`: a blackhole) AS a query reads no log and no
// versions: each round takes the changes its dataflow counted in the epochs committed since
// (executor/stream/change-log.ts, DirectChanges). No hold; a sink that keeps its rows counts its
// contents at its first round and records that epoch as its floor, the only floor it writes.
// After a restart it delivers what is committed from then on. Entries an older log left are
// dropped.
//
// A failed round (target down, timeout, lost connection) is retried with backoff (200 ms doubling
// to 10 s), each failure a row in oxbow_catalog.sink_errors; the next round asks the target what
// it holds first, since a round cut off during COMMIT may or may not have landed.

import type { RelationDef } from '../../sql/catalog.js';
import type { Epoch } from '../../sql/epoch.js';
import type { StateTable } from '../../storage/state-table.js';
import type { DirectChanges } from '../stream/change-log.js';
import type { ConnectorHost } from './connector-host.js';
import { changesBetween, deliverableEpoch, lastChangesBetween, type EpochChanges } from './sink-changes.js';
import { sinkKeyPositions } from './sink-key.js';
import { SinkLog } from './sink-log.js';
import { sinkStatusOf, type SinkStatus } from './sink-status.js';
import { BlackholeTarget, type SinkTarget } from './sink-target.js';
import { isPostgresSink, postgresSinkOptions } from './postgres/postgres-options.js';
import { PostgresSinkTarget } from './postgres/postgres-sink.js';

/** The store metadata key of a sink's progress (the Kafka sink's) or floor (target-sink.ts). */
const PROGRESS_PREFIX = 'sink-progress/';
const FLOOR_INTERVAL_MS = 10_000;
const FIRST_RETRY_MS = 200;
const LAST_RETRY_MS = 10_000;

/** The target of a sink of connector blackhole, postgres or jdbc; undefined for Kafka. */
export function sinkTargetOf(sink: RelationDef, from: RelationDef): SinkTarget | undefined {
  const connector = (sink.options?.['connector'] ?? '').toLowerCase();
  if (connector === 'blackhole') return new BlackholeTarget();
  if (!isPostgresSink(sink.options)) return undefined;
  const options = postgresSinkOptions(sink.options ?? {});
  const positions = from.columns.flatMap((column, position) => (column.hidden ? [] : [position]));
  const columns = positions.map((position) => ({ name: from.columns[position]!.name, type: from.columns[position]!.type }));
  const key = options.type === 'upsert' ? sinkKeyPositions(sink.options, from.name, from.columns, from.primaryKey) : [];
  return new PostgresSinkTarget(options, `${sink.schema}.${sink.name}`, columns, positions, key);
}

/** The history holder name of a sink (StateStore.holdHistory). */
export function sinkHolder(sinkId: number): string {
  return `sink/${sinkId}`;
}

export class TargetSink {
  busy = false;
  stopped = false;
  private readonly table: StateTable;
  /** A sink AS query's change log; undefined: the relation's versions are read. */
  private readonly log: SinkLog | undefined;
  private readonly status: SinkStatus;
  private readonly holder: string;
  private floor: Epoch | undefined;
  private delivered: Epoch | undefined;
  /** What the target holds (its progress): at or below `delivered`, which also moves past epochs without changes. */
  private written: Epoch | undefined;
  private resumed = false;
  private floorAt = 0;
  private failures = 0;
  private retryAt = 0;

  constructor(
    readonly sink: RelationDef,
    readonly from: RelationDef,
    private readonly core: ConnectorHost,
    private readonly target: SinkTarget,
  ) {
    this.table = core.store.table({
      tableId: from.id,
      columnTypes: from.columns.map((column) => column.type),
      primaryKey: from.primaryKey,
      ...(from.retentionMs === undefined ? {} : { retentionMs: from.retentionMs }),
    });
    this.log = from.stream?.changeLog === undefined ? undefined : new SinkLog(core.store, from);
    this.status = sinkStatusOf(core.sourceStatus);
    this.status.of(sink.id, target.connector);
    this.holder = sinkHolder(sink.id);
    const stored = core.store.getMeta(PROGRESS_PREFIX + sink.id);
    if (stored !== undefined) {
      this.floor = BigInt(new TextDecoder().decode(stored));
      this.hold(this.floor);
    }
  }

  /** Whether the backoff after a failed round has passed. */
  ready(now: number): boolean {
    return now >= this.retryAt;
  }

  /** Holds the history from `epoch`, or from the floor when that is lower (where a restart resumes at the latest). */
  private hold(epoch: Epoch): void {
    // The log keeps what is not delivered by itself; a direct sink reads no history.
    if (this.log !== undefined || (this.sink.stream !== undefined && this.core.streams.directChanges(this.sink.id) !== undefined)) return;
    const from = this.floor !== undefined && this.floor < epoch ? this.floor : epoch;
    if (!this.stopped) this.core.store.holdHistory(this.holder, this.from.id, { fromEpoch: from });
  }

  /** One delivery round: everything committed since what the target holds. */
  async deliver(): Promise<void> {
    // Only a sink AS a query has a dataflow of its own (a FROM sink's id is never a dataflow's).
    const direct = this.sink.stream === undefined ? undefined : this.core.streams.directChanges(this.sink.id);
    if (direct !== undefined) return this.deliverDirect(direct);
    if (!this.resumed) {
      let progress = await this.target.resume(this.floor);
      if (progress !== undefined && this.floor !== undefined && progress < this.floor) {
        // Not this sink's progress, or the target lost deliveries it acknowledged: never silently.
        this.status.failed(this.sink.id, this.target.connector, `the target holds the progress of sink "${this.sink.name}" at epoch ${progress}, below epoch ${this.floor} recorded as delivered (an older sink's of that name, or deliveries the target lost in a crash); sending the contents of "${this.from.name}" instead`, 0);
        progress = undefined;
      }
      this.delivered = this.written = progress;
      this.resumed = true;
      if (this.delivered !== undefined) this.hold(this.delivered);
    }
    const store = this.core.store;
    const to = deliverableEpoch(this.core);
    // No checkpoint holds anything yet: the first delivery (the contents) waits for one.
    if (this.delivered === undefined && to === 0n) return;
    if (this.delivered !== undefined && to <= this.delivered) {
      // Idle: the floor still catches up with what was delivered, so the hold can move on.
      const written = this.written;
      if (written !== undefined && this.floor !== undefined && this.floor < written && Date.now() - this.floorAt >= FLOOR_INTERVAL_MS) {
        await this.persistFloor(written);
        this.hold(this.delivered);
      }
      return;
    }
    let from = this.delivered;
    let changes: EpochChanges[];
    if (this.log === undefined && from !== undefined && from < store.readableWindow(this.from.id).oldest) {
      // Only when the hold came too late (history collected before this process held it).
      this.status.failed(this.sink.id, this.target.connector, `the changes of "${this.from.name}" since epoch ${from} are no longer kept; sent its contents at epoch ${to} instead`, 0);
      from = undefined;
    }
    if (from === undefined) {
      // The contents at `to`: held and recorded as the floor before the target can have any of it.
      this.hold(to);
      if (this.floor === undefined || this.floor < to) await this.persistFloor(to);
      changes = this.log?.rowsKept === false ? this.log.contents(to) : [{ epoch: to, deletes: [], inserts: [...this.table.scan({ epoch: to })] }];
    } else {
      changes = this.changesSince(from, to);
    }
    if (this.stopped) return;
    // Epochs that changed nothing here (other relations' commits) are not sent: the target's
    // progress stays where it is, and a restart resumes there and finds nothing in between.
    const empty = from !== undefined && changes.every((change) => change.inserts.length === 0 && change.deletes.length === 0);
    const rows = empty ? 0 : await this.target.write(changes, from === undefined ? undefined : this.written, to);
    this.delivered = to;
    if (!empty) this.written = to;
    this.log?.delivered(to);
    this.failures = 0;
    if (!empty) this.status.delivered(this.sink.id, this.target.connector, rows, to);
    if (this.written !== undefined && (this.floor === undefined || this.floor < this.written) && Date.now() - this.floorAt >= FLOOR_INTERVAL_MS) await this.persistFloor(this.written);
    this.hold(to);
  }

  /** A direct sink's round: the changes its dataflow counted in the epochs committed since the last round. */
  private async deliverDirect(direct: DirectChanges): Promise<void> {
    if (!this.resumed) {
      // Entries an older build logged for this sink: nothing reads them.
      if (this.log?.holdsEntries() === true) {
        const log = this.log;
        await this.core.writeLock.run(() => {
          if (this.stopped) return;
          try {
            log.clear();
            this.core.commit();
          } catch (error) {
            this.core.store.abort();
            throw error;
          }
        });
      }
      this.resumed = true;
    }
    const to = deliverableEpoch(this.core);
    if (this.delivered !== undefined && to <= this.delivered) return;
    if (this.delivered === undefined && this.floor === undefined && this.log?.rowsKept !== false) {
      // A new sink that keeps its rows: its backfill counted nothing, its first delivery is the
      // relation's contents at `to` (what its dataflow counted up to `to` is in them), recorded
      // as the floor so that a restart does not count them again.
      if (to === 0n) return;
      direct.take(to);
      await this.persistFloor(to);
      let rows = 0;
      for (const _row of this.table.scan({ epoch: to })) rows++;
      this.delivered = to;
      this.failures = 0;
      this.status.delivered(this.sink.id, this.target.connector, rows, to);
      return;
    }
    const { inserts, deletes } = direct.take(to);
    this.delivered = to;
    this.failures = 0;
    if (inserts + deletes > 0) this.status.delivered(this.sink.id, this.target.connector, inserts + deletes, to);
  }

  /** The changes in (from, to]: every one, or for an upsert target the last per key. */
  private changesSince(from: Epoch, to: Epoch): EpochChanges[] {
    const key = this.target.upsertKey;
    const types = key?.map((position) => this.from.columns[position]!.type);
    if (this.log !== undefined) {
      if (key === undefined) return this.log.changes(from, to);
      const { upserts, deletes } = this.log.lastChanges(from, to, key, types!);
      return [{ epoch: to, deletes, inserts: upserts }];
    }
    if (key === undefined) return changesBetween(this.table, from, to);
    const { upserts, deletes } = lastChangesBetween(this.table, from, to, key, types!);
    return [{ epoch: to, deletes, inserts: upserts }];
  }

  /** A failed round: backoff, a sink_errors row, and the target asked again next round. */
  failed(error: unknown): void {
    this.failures++;
    this.retryAt = Date.now() + Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failures - 1));
    this.resumed = false;
    this.target.reset();
    this.status.failed(this.sink.id, this.target.connector, error instanceof Error ? error.message : String(error), this.failures);
  }

  private async persistFloor(floor: Epoch): Promise<void> {
    await this.core.writeLock.run(() => {
      if (this.stopped || this.core.catalog.snapshot.relationById(this.sink.id) === undefined) return;
      const store = this.core.store;
      try {
        store.putMeta(PROGRESS_PREFIX + this.sink.id, new TextEncoder().encode(String(floor)));
        // The log's entries up to the floor are in the target: they go in the same commit.
        this.log?.trim(floor);
        this.core.commit();
      } catch (error) {
        store.abort();
        throw error;
      }
      this.log?.trimmed(floor);
    });
    this.floor = floor;
    this.floorAt = Date.now();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.core.store.holdHistory(this.holder, this.from.id, undefined);
    await this.target.stop();
  }
}
