// Sources that store no rows (RelationDef.replayed): a deterministic generator source keeps only its
// committed position per split in its state table, and every read replays the events below it. An
// append-only Kafka source keeps the same position rows (per partition, its next offset) plus its
// first offsets; its replays read the broker (kafka/kafka-replay.ts).
//
// Why: a generator's unit g (an event for Nexmark, a row for datagen) is a function of the options
// and g alone, so storing the rows it emitted would only write the stream a second time (q0 wrote
// every event into the source's table and again into the view). RisingWave's CREATE SOURCE stores
// nothing either.
//
// The state table (id = the relation id, the relation's own schema, so every opener agrees on the
// key) holds one *position row* per split: the row id column carries the split number (the key),
// the first other column carries the split's position (units emitted, as a bigint; rows are
// self-describing, so that column's declared type does not matter), the rest NULL. The source
// manager writes the position rows of every epoch it commits, beside the offsets metadata, so a
// position is versioned by epoch like any row: AS OF an older epoch reads the shorter prefix, the
// readable window and retention are the table's, DROP drops it.
//
// A replayed row's hidden row id is its unit number g = split + offset * splits (for Nexmark the
// event number), written by the producer, so a replay of units [0, n) is the same rows, byte for
// byte, as the stream emitted, row ids included (views over append-only sources key their rows by
// them). Replays come in row-id order, as a scan of a stored source's table came in key order.

import type { RelationDef } from '../../sql/catalog.js';
import type { Epoch } from '../../sql/epoch.js';
import type { Row } from '../../sql/value.js';
import type { RowVersion, StateStore, StateTable } from '../../storage/state-table.js';
import { ROW_ID_COLUMN } from '../catalog/catalog.js';
import { generatorProducer } from './generators/generator-reader.js';
import type { SplitProducer } from './generators/split-producer.js';

/** Rows generated per step of a replay (the lazy iterator's chunk). */
const REPLAY_CHUNK_ROWS = 4096;

/** True for a source whose reads replay its events (it stores only its positions). */
export function isReplayed(relation: RelationDef): boolean {
  return relation.kind === 'source' && relation.replayed === true;
}

/** Where the split number (the key) and the position sit in a position row. */
interface PositionLayout {
  readonly width: number;
  readonly splitAt: number;
  readonly positionAt: number;
}

function positionLayout(relation: RelationDef): PositionLayout {
  const splitAt = relation.columns.findIndex((column) => column.name === ROW_ID_COLUMN && column.hidden === true);
  if (splitAt < 0 || relation.primaryKey.length !== 1 || relation.primaryKey[0] !== splitAt) throw new Error(`source ${relation.name}: a replayed source is keyed by its hidden row id`);
  const positionAt = splitAt === 0 ? 1 : 0;
  return { width: Math.max(relation.columns.length, positionAt + 1), splitAt, positionAt };
}

/** The state table holding a replayed source's positions (the relation's own table and schema). */
export function positionTable(store: StateStore, relation: RelationDef): StateTable {
  return store.table({
    tableId: relation.id,
    columnTypes: relation.columns.map((column) => column.type),
    primaryKey: relation.primaryKey,
    ...(relation.retentionMs === undefined ? {} : { retentionMs: relation.retentionMs }),
    // One row per split rewritten every epoch: kept apart from the growing views (DESIGN.md §6).
    records: true,
  });
}

/** Writes the position of each split into the open epoch. */
export function writePositions(table: StateTable, relation: RelationDef, positions: ReadonlyMap<number, bigint>): void {
  const layout = positionLayout(relation);
  for (const [split, position] of positions) {
    const row: Row = new Array(layout.width).fill(null);
    row[layout.splitAt] = BigInt(split);
    row[layout.positionAt] = position;
    table.insert(row);
  }
}

/** Each split's committed position as of `epoch` (default: the latest state). */
export function readPositions(table: StateTable, relation: RelationDef, epoch?: Epoch): Map<number, number> {
  const layout = positionLayout(relation);
  const positions = new Map<number, number>();
  for (const row of table.scan(epoch === undefined ? {} : { epoch })) {
    const split = Number(row[layout.splitAt] as bigint);
    if (split >= 0) positions.set(split, Number(row[layout.positionAt] as bigint));
  }
  return positions;
}

// A replayed Kafka source (kafka/kafka-replay.ts) has a second row per partition p, keyed -1 - p:
// the first offset it read (where its history starts), written once, in the epoch that first
// committed a position of p. A replay of p reads [first, position).

/** Writes the first offset of each partition (once per partition; a Kafka source's history start). */
export function writeFirstOffsets(table: StateTable, relation: RelationDef, firsts: ReadonlyMap<number, bigint>): void {
  const layout = positionLayout(relation);
  for (const [partition, first] of firsts) {
    const row: Row = new Array(layout.width).fill(null);
    row[layout.splitAt] = BigInt(-1 - partition);
    row[layout.positionAt] = first;
    table.insert(row);
  }
}

/** Per partition of a replayed Kafka source: messages [first offset, committed next offset) as of `epoch`. */
export function readOffsetRanges(table: StateTable, relation: RelationDef, epoch?: Epoch): Map<number, { readonly partition: number; readonly from: bigint; readonly to: bigint }> {
  const layout = positionLayout(relation);
  const next = new Map<number, bigint>();
  const first = new Map<number, bigint>();
  for (const row of table.scan(epoch === undefined ? {} : { epoch })) {
    const key = Number(row[layout.splitAt] as bigint);
    const offset = row[layout.positionAt] as bigint;
    if (key >= 0) next.set(key, offset);
    else first.set(-1 - key, offset);
  }
  const ranges = new Map<number, { partition: number; from: bigint; to: bigint }>();
  for (const [partition, to] of next) ranges.set(partition, { partition, from: first.get(partition) ?? 0n, to });
  return ranges;
}

/** The first offsets a replayed Kafka source has written (latest state). */
export function readFirstOffsets(table: StateTable, relation: RelationDef): Map<number, bigint> {
  const firsts = new Map<number, bigint>();
  for (const range of readOffsetRanges(table, relation).values()) firsts.set(range.partition, range.from);
  return firsts;
}

/** The positions' history of a replayed Kafka source (FOR SYSTEM_TIME BETWEEN): each next offset with the epoch that wrote it. */
export function offsetHistory(relation: RelationDef, versions: Iterable<RowVersion>, to: Epoch): { partition: number; next: bigint; epoch: Epoch }[] {
  const layout = positionLayout(relation);
  const out: { partition: number; next: bigint; epoch: Epoch }[] = [];
  for (const version of versions) {
    if (version.validFrom > to) continue;
    const key = Number(version.row[layout.splitAt] as bigint);
    if (key >= 0) out.push({ partition: key, next: version.row[layout.positionAt] as bigint, epoch: version.validFrom });
  }
  return out;
}

/** About how many rows a replay yields: units emitted (a generator), messages read (Kafka). */
export function replayedRowEstimate(table: StateTable, relation: RelationDef): number {
  if ((relation.options?.['connector'] ?? '').toLowerCase() !== 'kafka') return unitsEmitted(readPositions(table, relation));
  let total = 0;
  for (const range of readOffsetRanges(table, relation).values()) total += Number(range.to - range.from);
  return total;
}

/** The producer of a replayed source's rows, its row id column filled with unit numbers. */
export function replayProducer(relation: RelationDef): SplitProducer {
  return generatorProducer(relation.options ?? {}, relation.columns, { unitIds: true });
}

/** Units emitted over every split (the rows a replay yields, for a generator that emits a row per unit). */
export function unitsEmitted(positions: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const position of positions.values()) total += position;
  return total;
}

/**
 * The rows of units below each split's position, in unit (row id) order: the units every split
 * has reached in one run, then the few beyond the slowest split one by one. Lazy: rows are made
 * a chunk at a time as the iterator is read.
 */
export function replayRows(relation: RelationDef, positions: ReadonlyMap<number, number>, producer: SplitProducer = replayProducer(relation)): Iterable<Row> {
  const splits = producer.splits;
  let slowest = Number.POSITIVE_INFINITY;
  let fastest = 0;
  for (let split = 0; split < splits; split++) {
    const position = positions.get(split) ?? 0;
    if (position < slowest) slowest = position;
    if (position > fastest) fastest = position;
  }
  const covered = slowest * splits;
  const last = fastest * splits;
  return {
    *[Symbol.iterator]() {
      let unit = 0;
      while (unit < covered) {
        const rows: Row[] = [];
        unit = producer.produceRange(unit, covered, rows, REPLAY_CHUNK_ROWS);
        yield* rows;
      }
      for (let g = covered; g < last; g++) {
        if (Math.floor(g / splits) >= (positions.get(g % splits) ?? 0)) continue;
        const rows: Row[] = [];
        producer.produceRange(g, g + 1, rows, 1);
        yield* rows;
      }
    },
  };
}

/** The replayed row whose row id is `rowId`, if that unit was emitted and made a row. */
export function replayedRow(relation: RelationDef, rowId: bigint, positions: ReadonlyMap<number, number>): Row | undefined {
  if (rowId < 0n || rowId > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const producer = replayProducer(relation);
  const g = Number(rowId);
  if (Math.floor(g / producer.splits) >= (positions.get(g % producer.splits) ?? 0)) return undefined;
  const rows: Row[] = [];
  producer.produceRange(g, g + 1, rows, 1);
  return rows[0];
}

/**
 * Every row valid at some point in [from, to] (FOR SYSTEM_TIME BETWEEN): the rows emitted by `to`,
 * each valid from the epoch whose position first covered it, never replaced (sources are
 * append-only). The positions' history comes from `history` (the position table's versions over
 * the readable window); units below the oldest retained position carry that version's epoch
 * (the one thing a replay cannot tell apart once version GC dropped older positions).
 */
export function replayVersions(relation: RelationDef, history: Iterable<RowVersion>, to: Epoch): Iterable<RowVersion> {
  const layout = positionLayout(relation);
  const producer = replayProducer(relation);
  // Per split: positions in ascending order with the epoch that wrote each.
  const steps = new Map<number, { position: number; epoch: Epoch }[]>();
  for (const version of history) {
    if (version.validFrom > to) continue;
    const split = Number(version.row[layout.splitAt] as bigint);
    let list = steps.get(split);
    if (list === undefined) steps.set(split, (list = []));
    list.push({ position: Number(version.row[layout.positionAt] as bigint), epoch: version.validFrom });
  }
  for (const list of steps.values()) list.sort((a, b) => (a.epoch < b.epoch ? -1 : a.epoch > b.epoch ? 1 : 0));
  const positions = new Map<number, number>();
  for (const [split, list] of steps) positions.set(split, list[list.length - 1]!.position);
  const rowIdAt = layout.splitAt;
  return {
    *[Symbol.iterator]() {
      for (const row of replayRows(relation, positions, producer)) {
        const g = Number(row[rowIdAt] as bigint);
        const offset = Math.floor(g / producer.splits);
        const list = steps.get(g % producer.splits)!;
        // The first position above this unit's offset: the epoch that committed it.
        let low = 0;
        let high = list.length - 1;
        while (low < high) {
          const middle = (low + high) >> 1;
          if (list[middle]!.position > offset) high = middle;
          else low = middle + 1;
        }
        yield { row, validFrom: list[low]!.epoch, validTo: null };
      }
    },
  };
}

/**
 * A replayed Kafka source's first offset per partition, for the source manager: the startup
 * offsets of its first start (or those it committed before a restart), the first batch's offset of
 * a partition added later; each written once, beside the partition's first position.
 */
export class FirstOffsets {
  private readonly known = new Map<number, bigint>();
  private readonly written = new Set<number>();

  constructor(
    private readonly table: StateTable,
    private readonly relation: RelationDef,
  ) {}

  /** The source starts at `resume`; `restarted`: it committed before (its first offsets are stored). */
  started(resume: ReadonlyMap<number, bigint>, restarted: boolean): void {
    if (restarted) {
      for (const [partition, first] of readFirstOffsets(this.table, this.relation)) {
        this.known.set(partition, first);
        this.written.add(partition);
      }
    }
    for (const [partition, offset] of resume) if (!this.known.has(partition)) this.known.set(partition, offset);
  }

  /** A batch of `partition` starting at `firstOffset` arrived (a partition not known at start begins there). */
  saw(partition: number, firstOffset: bigint): void {
    if (!this.known.has(partition)) this.known.set(partition, firstOffset);
  }

  /** Into the open epoch: the first offsets of the partitions in `applied` not written yet. */
  write(applied: ReadonlyMap<number, bigint>): void {
    let fresh: Map<number, bigint> | undefined;
    for (const [partition, next] of applied) {
      if (this.written.has(partition)) continue;
      (fresh ??= new Map()).set(partition, this.known.get(partition) ?? next);
      this.written.add(partition);
    }
    if (fresh !== undefined) writeFirstOffsets(this.table, this.relation, fresh);
  }
}
