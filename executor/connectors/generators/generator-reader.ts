// The reader of a generator connector (nexmark, datagen): a SourceReader whose partitions are the
// producer's splits and whose offsets are positions in them. It hands rows, already in the
// relation's layout, to the source manager (`GeneratedRowsListener.generated`), one chunk of at
// most max.chunk.size rows per split in turn, yielding to the event loop between chunks so the
// barrier runs; the manager's promise is the backpressure. A rate limit (Nexmark's
// min.event.gap.in.ns, datagen.rows.per.second) paces each split: a split may be at most
// MAX_BURST_SECONDS of its rate behind schedule, so after the event loop was held (a long epoch)
// it makes up at most that much at once and its schedule slips by the rest. A rate is a ceiling,
// not a quota to make up: without the slip, a reader held for 30 s pushed 30 s of events into the
// next epochs, which held the loop longer still (a lagging soak's epochs grew to 5-80 s).
// While the listener wants no rows (`rowsWanted`), a split advances by units alone: their rows are
// generated where they are read (source fragments' workers), a step of units holding about as many
// rows as a chunk of the row path (measured once per split on its first chunk): the sources of one
// generator keep the relative pace they have when their rows are made here (Nexmark's sparse
// auction source runs ahead of the bids in units, so a bid's auction is made before it).

import type { ColumnDef, RelationDef } from '../../../sql/catalog.js';
import { SqlError, SqlState } from '../../../sql/errors.js';
import type { Row } from '../../../sql/value.js';
import { ROW_ID_COLUMN } from '../../catalog/catalog.js';
import type { PartitionOffsets, SourceListener, SourceReader, StartupResolver } from '../source.js';
import { DatagenProducer, datagenOptions } from './datagen-source.js';
import { NexmarkProducer, nexmarkOptions, nexmarkShape } from './nexmark-source.js';
import type { SplitProducer } from './split-producer.js';

export const GENERATOR_CONNECTORS: ReadonlySet<string> = new Set(['nexmark', 'datagen']);

/** How far behind its rate a paced split may fall before its schedule slips (seconds of its rate). */
export const MAX_BURST_SECONDS = 1;
/** Pause of a paced reader with nothing due, in milliseconds: 1000 / rate within these bounds. */
const MIN_PACE_PAUSE_MS = 10;
const MAX_PACE_PAUSE_MS = 100;

/** The listener side a generator needs: rows of a partition up to its next offset. */
export interface GeneratedRowsListener extends SourceListener {
  generated(partition: number, rows: Row[], next: bigint): Promise<void>;
  /**
   * False while no one on the main thread needs the rows (a replayed source read only by source
   * fragments, whose workers generate them: executor/stream/PARALLEL.md): the reader then hands
   * over units without rows (`advanced`).
   */
  rowsWanted?(): boolean;
  /** Units [from, next) of `partition`, read without generating their rows. */
  advanced?(partition: number, from: number, next: number): Promise<void>;
}

export function isGeneratorConnector(relation: RelationDef): boolean {
  return GENERATOR_CONNECTORS.has((relation.options?.['connector'] ?? '').toLowerCase());
}

/**
 * Checks a generator source's options against its declared columns (CREATE time: 22023 for bad
 * options, 42703/42804/0A000 for columns) and returns its producer. `columns` are the relation's
 * columns, the hidden row id included.
 */
export function generatorProducer(options: Readonly<Record<string, string>>, columns: readonly ColumnDef[], { unitIds = false }: { readonly unitIds?: boolean } = {}): SplitProducer {
  const connector = (options['connector'] ?? '').toLowerCase();
  const declared = columns.filter((column) => !(column.name === ROW_ID_COLUMN && column.hidden));
  // With unitIds the hidden row id column receives each row's unit number (a replayed source's ids).
  const rowIdAt = unitIds ? columns.findIndex((column) => column.name === ROW_ID_COLUMN && column.hidden) : -1;
  if (connector === 'nexmark') {
    const parsed = nexmarkOptions(options);
    return new NexmarkProducer(parsed, nexmarkShape(parsed.table, declared, columns.length, rowIdAt));
  }
  if (connector === 'datagen') return new DatagenProducer(datagenOptions(options, declared), columns.length, rowIdAt);
  throw new SqlError(SqlState.featureNotSupported, `connector "${connector}" is not a generator`);
}

export class GeneratorReader implements SourceReader, StartupResolver {
  private readonly producer: SplitProducer;
  private readonly rowIdPosition: number;
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    relation: RelationDef,
    private readonly nextRowId: () => bigint,
    /** Milliseconds, for the rate limit (tests drive their own). */
    private readonly clock: () => number = () => performance.now(),
  ) {
    // A replayed source's row ids are unit numbers (the producer writes them); a stored one's are
    // the engine's time-based ids.
    const replayed = relation.kind === 'source' && relation.replayed === true;
    this.producer = generatorProducer(relation.options ?? {}, relation.columns, { unitIds: replayed });
    this.rowIdPosition = replayed ? -1 : relation.columns.findIndex((column) => column.name === ROW_ID_COLUMN && column.hidden);
  }

  startOffsets(): Promise<Map<number, bigint>> {
    const offsets = new Map<number, bigint>();
    for (let split = 0; split < this.producer.splits; split++) offsets.set(split, 0n);
    return Promise.resolve(offsets);
  }

  start(resume: PartitionOffsets, listener: GeneratedRowsListener): Promise<void> {
    this.running = this.run(resume, listener).catch((error: unknown) => listener.trouble(error instanceof Error ? error.message : String(error)));
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async run(resume: PartitionOffsets, listener: GeneratedRowsListener): Promise<void> {
    const producer = this.producer;
    const splits = producer.splits;
    const offsets: number[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    for (let split = 0; split < splits; split++) {
      offsets.push(Number(resume.get(split) ?? 0n));
      starts.push(offsets[split]!);
      const end = producer.end(split);
      ends.push(end ?? Number.POSITIVE_INFINITY);
      if (end !== undefined) listener.highWatermark(split, BigInt(end));
    }
    const rate = producer.unitsPerSecond;
    // Each paced split's schedule: `starts[split]` units were due at `startedAt[split]`, and `rate`
    // more every second since.
    const startedAt: number[] = new Array<number>(splits).fill(this.clock());
    const burst = Math.max(1, Math.ceil(rate * MAX_BURST_SECONDS));
    const chunk = producer.maxChunkRows;
    const rowId = this.rowIdPosition;
    /** Per split, units per step while advancing without rows (0: not measured yet). */
    const steps: number[] = new Array<number>(splits).fill(0);
    while (!this.stopped) {
      let produced = false;
      let finished = 0;
      const now = this.clock();
      for (let split = 0; split < splits && !this.stopped; split++) {
        const offset = offsets[split]!;
        if (offset >= ends[split]!) {
          finished++;
          continue;
        }
        let limit = ends[split]!;
        if (rate > 0) {
          let due = starts[split]! + Math.floor(((now - startedAt[split]!) / 1000) * rate);
          if (due - offset > burst) {
            // Held back for longer than the burst allows: make up one burst, slip the rest.
            due = offset + burst;
            starts[split] = due;
            startedAt[split] = now;
          }
          limit = Math.min(limit, due);
        }
        if (offset >= limit) continue;
        if (listener.advanced !== undefined && listener.rowsWanted?.() === false) {
          if (steps[split] === 0) steps[split] = Math.max(chunk, producer.produce(split, offset, ends[split]!, [], chunk) - offset);
          const next = Math.min(limit, offset + steps[split]!);
          offsets[split] = next;
          produced = true;
          await listener.advanced(split, offset, next);
          continue;
        }
        const rows: Row[] = [];
        const next = producer.produce(split, offset, limit, rows, chunk);
        if (rowId >= 0) for (let i = 0; i < rows.length; i++) rows[i]![rowId] = this.nextRowId();
        offsets[split] = next;
        produced = true;
        await listener.generated(split, rows, BigInt(next));
      }
      if (finished === splits) return;
      if (produced) await new Promise<void>((resolve) => setImmediate(resolve));
      // Nothing due: a paced split waits for its next units (a few at a time at high rates, not a
      // wake-up per millisecond); an unpaced one is only held by backpressure.
      else await new Promise<void>((resolve) => setTimeout(resolve, rate > 0 ? Math.max(MIN_PACE_PAUSE_MS, Math.min(MAX_PACE_PAUSE_MS, 1000 / rate)) : 1));
    }
  }
}
