// The batch executor's reads of sources that store no rows (batch/table-access.ts's
// SourceReplays): a generator source replays its units below the positions its state table holds
// (source-replay.ts), a Kafka source its topic below the offsets (kafka/kafka-replay.ts), fetched
// before the plan runs and narrowed by the scans' filters and the statement's parameters.

import type { RelationDef } from '../../sql/catalog.js';
import type { Epoch } from '../../sql/epoch.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Row, Value } from '../../sql/value.js';
import type { RowVersion, StateTable } from '../../storage/state-table.js';
import type { SourceReplays, StatementReplays } from '../batch/table-access.js';
import { isReplayed, offsetHistory, readOffsetRanges, readPositions, replayedRow, replayedRowEstimate, replayRows, replayVersions } from './source-replay.js';
import { isKafkaReplayed, kafkaReplayReads, KafkaReplay, narrowReplay, replayChunks, replayLimits, type KafkaReplayRead } from './kafka/kafka-replay.js';

export const sourceReplays: SourceReplays = {
  isReplayed: (relation) => isReplayed(relation),
  estimatedRows: (table, relation) => replayedRowEstimate(table, relation),
  forStatement: (table, snapshot) => new ReplayReader(table, snapshot),
};

class ReplayReader implements StatementReplays {
  /** Replays of Kafka sources, fetched by prepare() before the plan runs. */
  private readonly kafkaReplays = new Map<number, KafkaReplay>();

  constructor(
    private readonly table: (relation: RelationDef) => StateTable,
    private readonly snapshot: Epoch,
  ) {}

  prepare(plan: unknown, signal?: AbortSignal, parameters?: readonly Value[]): Promise<void> | undefined {
    const reads = kafkaReplayReads(plan);
    return reads.length === 0 ? undefined : this.prepareReads(reads, signal, parameters);
  }

  prepareRelations(relations: readonly RelationDef[], signal?: AbortSignal): Promise<void> {
    return this.prepareReads(relations.map((relation) => ({ relation, scans: [{ filter: undefined, projection: undefined }] })), signal);
  }

  /** Each source's replay, narrowed to what its scans' filters can match (a point read by row id fetches one message). */
  private async prepareReads(reads: readonly KafkaReplayRead[], signal?: AbortSignal, parameters?: readonly Value[]): Promise<void> {
    for (const read of reads) {
      const relation = read.relation;
      if (!isKafkaReplayed(relation) || this.kafkaReplays.has(relation.id)) continue;
      const ranges = narrowReplay(read, readOffsetRanges(this.table(relation), relation, this.snapshot), parameters);
      this.kafkaReplays.set(relation.id, await KafkaReplay.fetch(relation, ranges, { ...(signal === undefined ? {} : { signal }), limitBytes: replayLimits.bytes }));
    }
  }

  batches(relation: RelationDef, signal?: AbortSignal): AsyncIterable<{ readonly rows: Row[] }> {
    return replayChunks(relation, readOffsetRanges(this.table(relation), relation, this.snapshot), signal === undefined ? {} : { signal });
  }

  private kafkaReplay(relation: RelationDef): KafkaReplay {
    const replay = this.kafkaReplays.get(relation.id);
    if (replay === undefined) throw new SqlError(SqlState.internalError, `oxbow internal assertion: source "${relation.name}" is read before its replay was fetched (TableAccess.prepare)`);
    return replay;
  }

  rows(relation: RelationDef, epoch: Epoch): Iterable<Row> {
    const table = this.table(relation);
    if (isKafkaReplayed(relation)) return this.kafkaReplay(relation).rows(readOffsetRanges(table, relation, epoch));
    return replayRows(relation, readPositions(table, relation, epoch));
  }

  versions(relation: RelationDef, oldest: Epoch, to: Epoch): Iterable<RowVersion> {
    const table = this.table(relation);
    if (isKafkaReplayed(relation)) {
      return this.kafkaReplay(relation).versions(offsetHistory(relation, table.versions(oldest, to), to), readOffsetRanges(table, relation, to < this.snapshot ? to : this.snapshot));
    }
    return replayVersions(relation, table.versions(oldest, to), to);
  }

  row(relation: RelationDef, rowId: bigint, epoch: Epoch): Row | undefined {
    const table = this.table(relation);
    if (isKafkaReplayed(relation)) return this.kafkaReplay(relation).row(rowId, readOffsetRanges(table, relation, epoch));
    return replayedRow(relation, rowId, readPositions(table, relation, epoch));
  }
}
