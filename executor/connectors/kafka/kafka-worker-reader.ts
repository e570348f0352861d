// The main-thread side of a Kafka source read in a worker thread (kafka-worker.ts): a SourceReader
// that starts the worker at oxbow's offsets, unpacks each decoded batch it posts
// (decoded-batch.ts), sets the engine's row ids (a source that stores no rows gets them from the
// worker: partition and offset, kafka-replay.ts), and hands the rows to the source manager
// (`DecodedBatchListener.decoded`). A batch is acknowledged to the worker once the manager's
// promise resolves (it has room), so the worker holds at most `maxBatchesInFlight` batches
// unconsumed before it stops fetching. Trouble, recovery and high watermarks pass through.
//
// stop() stops the worker's consumer and waits for the thread to end (terminating it if it does
// not within STOP_TIMEOUT_MS). A worker that dies on its own is restarted after a second from the
// offsets handed over so far, and the death is reported as trouble.

import { Worker } from 'node:worker_threads';
import { compiledWorkerScript } from '../../batch/worker-script.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { Row } from '../../../sql/value.js';
import type { PartitionOffsets, SourceListener, SourceReader, StartupResolver } from '../source.js';
import { sourceLayout } from '../source-layout.js';
import { unpackRows } from './decoded-batch.js';
import type { RawMessages } from '../../stream/stream-context.js';
import { KafkaReader } from './kafka-reader.js';
import { StableOffsets } from './kafka-ranges.js';
import { isKafkaReplayed } from './kafka-replay.js';
import type { KafkaOptions } from './kafka-options.js';
import type { KafkaWorkerData, MainToWorker, WorkerToMain } from './worker-protocol.js';

export const DEFAULT_MAX_BATCHES_IN_FLIGHT = 4;

const STOP_TIMEOUT_MS = 10_000;
const RESTART_DELAY_MS = 1000;
/** How often the reader checks whether its source is read as ranges or by its worker. */
const MODE_CHECK_MS = 250;
/** Offsets of a partition in one range at most, and the wait between two reads of the stable offsets that found nothing new. */
const RANGE_BUDGET = 16_384n;
const RANGE_POLL_MS = 50;
const NO_KINDS = new Int8Array(0);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** One partition's messages [firstOffset, next), decoded into the relation's rows (row ids set). */
export interface DecodedBatch {
  readonly partition: number;
  readonly rows: Row[];
  /** Per row: +1 insert/upsert, -1 delete by the row's key columns. */
  readonly kinds: Int8Array;
  readonly firstOffset: bigint;
  readonly next: bigint;
  /** Messages in [firstOffset, next), rejected ones included (0 for a `range`: its owner counts them). */
  readonly messages: number;
  readonly highWatermark: bigint;
  /** Messages that could not be decoded: offset, error, the payload's prefix. */
  readonly rejects: readonly { readonly offset: bigint; readonly error: string; readonly payload: Buffer | null }[];
  /**
   * The rows still packed (decoded-batch.ts; `rows` is then empty): a source that stores no rows
   * whose listener asked for them so (`wantsPacked`: a source fragment's workers take them).
   */
  readonly packed?: { readonly count: number; readonly rows: Uint8Array };
  /** The messages undecoded (raw-batch.ts; `rows` is empty): the worker posted them so because only source fragments read the source. */
  readonly raw?: RawMessages;
  /**
   * No message: the offsets [firstOffset, next) for the source fragment's owners to fetch
   * themselves (kafka-ranges.ts). `messages` is 0: how many messages the range holds (control
   * records and aborted transactions' messages are offsets too) is known once fetched, and the
   * owner that fetched it says so with its epoch batch (source-protocol.ts, `fetched`).
   */
  readonly range?: true;
}

/** The listener side a worker reader needs: decoded batches instead of raw messages. */
export interface DecodedBatchListener extends SourceListener {
  decoded(batch: DecodedBatch): Promise<void>;
  /** Whether a replayed source's batches are handed over packed (only source fragments read it). */
  wantsPacked?(): boolean;
  /** Whether a replayed source is read as offset ranges its fragments' owners fetch (`range` batches) rather than by the Kafka worker. */
  wantsRanges?(): boolean;
}

export interface KafkaWorkerReaderOptions {
  readonly maxBatchesInFlight?: number;
  /** FORMAT PLAIN ENCODE JSON through the fast packer (json-row-packer.ts); default true. */
  readonly fastJson?: boolean;
  /**
   * A Kafka source fragment's workers decode its messages (the Kafka worker posts them raw) rather
   * than this reader's worker; default true (the engine's `kafkaFragmentDecode`;
   * executor/stream/PARALLEL.md, "Kafka sources").
   */
  readonly fragmentDecode?: boolean;
}

export class KafkaWorkerReader implements SourceReader, StartupResolver {
  private worker: Worker | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;
  /** Next offset per partition as handed to the listener (a restarted worker resumes there). */
  private readonly positions = new Map<number, bigint>();
  private readonly maxBatchesInFlight: number;
  private readonly fastJson: boolean;
  private readonly fragmentDecode: boolean;
  /** The hidden row id's position (a source without a primary key), set here on the main thread. */
  private readonly rowIdPosition: number | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** Batches received and not yet acknowledged (for tests: the back-pressure bound). */
  unacknowledged = 0;
  /** Workers started (for tests: a restart after a crash). */
  workersStarted = 0;
  /** Rows the workers' JSON fast path packed (for tests: the fast path is taken). */
  fastRows = 0;
  /** A worker thread is running (started and not yet exited). */
  workerAlive = false;
  /** How the source is read now: by the Kafka worker, or as offset ranges the fragments' owners fetch (kafka-ranges.ts). */
  mode: 'worker' | 'ranges' = 'worker';
  private listener: DecodedBatchListener | undefined;
  private modeTimer: NodeJS.Timeout | undefined;
  /** A change of mode under way (the old reading stopped before the new one starts). */
  private switching: Promise<void> | undefined;
  private ranges: { readonly stop: AbortController; readonly done: Promise<void> } | undefined;

  constructor(
    private readonly relation: RelationDef,
    private readonly options: KafkaOptions,
    private readonly name: string,
    private readonly nextRowId: () => bigint,
    settings: KafkaWorkerReaderOptions = {},
  ) {
    this.maxBatchesInFlight = settings.maxBatchesInFlight ?? DEFAULT_MAX_BATCHES_IN_FLIGHT;
    this.fastJson = settings.fastJson ?? true;
    this.fragmentDecode = settings.fragmentDecode ?? true;
    // A replayed source's row ids come from partition and offset, set by the worker's decoder.
    this.rowIdPosition = isKafkaReplayed(relation) ? undefined : sourceLayout(relation).rowIdPosition;
  }

  /** The startup mode's offsets for a first start (one admin request from the main thread). */
  startOffsets(): Promise<Map<number, bigint>> {
    return new KafkaReader(this.options, this.name).startOffsets();
  }

  async start(resume: PartitionOffsets, listener: SourceListener): Promise<void> {
    for (const [partition, offset] of resume) this.positions.set(partition, offset);
    const decoded = listener as DecodedBatchListener;
    this.listener = decoded;
    if (decoded.wantsRanges?.() === true) this.startRanges(decoded);
    else this.spawn(decoded);
    if (decoded.wantsRanges !== undefined) {
      this.modeTimer = setInterval(() => this.followMode(), MODE_CHECK_MS);
      this.modeTimer.unref();
    }
  }

  /** Resolves once the worker thread has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
    if (this.modeTimer !== undefined) clearInterval(this.modeTimer);
    await this.switching;
    await this.stopRanges();
    await this.stopWorker();
  }

  /**
   * Offsets of `partition` from `offset` on were handed over as a range that no fragment took (a
   * dataflow needs the rows on the main thread now): read them again from there.
   */
  rewind(partition: number, offset: bigint): void {
    const current = this.positions.get(partition);
    if (current !== undefined && current <= offset) return;
    this.positions.set(partition, offset);
    if (this.stopping || this.mode !== 'worker' || this.worker === undefined) return;
    // The worker read past it: a new one starts at the positions.
    const listener = this.listener!;
    this.switching = (async () => {
      await this.stopWorker();
      if (!this.stopping) this.spawn(listener);
    })().finally(() => (this.switching = undefined));
  }

  /** The worker stopped (its messages from now on ignored: the positions stay what was handed over). */
  private async stopWorker(): Promise<void> {
    const worker = this.worker;
    if (worker === undefined) return;
    this.worker = undefined;
    worker.postMessage({ type: 'stop' } satisfies MainToWorker);
    const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }

  private async stopRanges(): Promise<void> {
    const ranges = this.ranges;
    if (ranges === undefined) return;
    this.ranges = undefined;
    ranges.stop.abort();
    await ranges.done;
  }

  /** Reads by the worker or as ranges, as the listener wants now. */
  private followMode(): void {
    const listener = this.listener;
    if (this.stopping || this.switching !== undefined || listener === undefined) return;
    const wanted = listener.wantsRanges?.() === true ? 'ranges' : 'worker';
    if (wanted === this.mode) return;
    this.switching = (async () => {
      if (wanted === 'ranges') {
        if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
        await this.stopWorker();
        if (!this.stopping) this.startRanges(listener);
      } else {
        await this.stopRanges();
        if (!this.stopping) this.spawn(listener);
      }
    })().finally(() => (this.switching = undefined));
  }

  /** Hands the listener offset ranges up to each partition's last stable offset, as it has room. */
  private startRanges(listener: DecodedBatchListener): void {
    this.mode = 'ranges';
    const stop = new AbortController();
    const signal = stop.signal;
    const offsets = new StableOffsets(this.options, this.name);
    const done = (async () => {
      let troubled = false;
      while (!signal.aborted) {
        let read: Awaited<ReturnType<StableOffsets['read']>>;
        try {
          read = await offsets.read(this.positions);
          if (troubled) listener.recovered();
          troubled = false;
        } catch (error) {
          if (signal.aborted) break;
          troubled = true;
          listener.trouble(`Kafka topic "${this.options.topic}" at ${this.options.brokers.join(',')}: ${error instanceof Error ? error.message : String(error)}`);
          await sleep(RESTART_DELAY_MS, signal);
          continue;
        }
        let moved = false;
        for (const [partition, stable] of read.stable) {
          if (signal.aborted) break;
          listener.highWatermark(partition, stable);
          // The position read again after each wait: a rewind may have moved it back.
          for (let position = this.positions.get(partition) ?? read.starts.get(partition) ?? 0n; position < stable && !signal.aborted; position = this.positions.get(partition)!) {
            const next = stable - position > RANGE_BUDGET ? position + RANGE_BUDGET : stable;
            const batch: DecodedBatch = { partition, rows: [], kinds: NO_KINDS, firstOffset: position, next, messages: 0, highWatermark: stable, rejects: [], range: true };
            this.positions.set(partition, next);
            moved = true;
            await listener.decoded(batch);
          }
        }
        if (!moved) await sleep(RANGE_POLL_MS, signal);
      }
      await offsets.close();
    })();
    this.ranges = { stop, done };
  }

  private spawn(listener: DecodedBatchListener): void {
    this.mode = 'worker';
    // Only a source that stores no rows (row ids from partition and offset) goes raw.
    const rawWanted = (): boolean => this.rowIdPosition === undefined && isKafkaReplayed(this.relation) && this.fragmentDecode && listener.wantsPacked?.() === true;
    /** What the worker was last told: post batches undecoded or not. */
    let raw = rawWanted();
    const data: KafkaWorkerData = {
      raw,
      relation: this.relation,
      options: this.options,
      name: this.name,
      resume: [...this.positions],
      maxBatchesInFlight: this.maxBatchesInFlight,
      fastJson: this.fastJson,
    };
    const worker = new Worker(compiledWorkerScript(import.meta.url, './kafka-worker.js'), { workerData: data });
    this.worker = worker;
    this.workersStarted++;
    this.workerAlive = true;
    this.unacknowledged = 0;
    const rowIdPosition = this.rowIdPosition;
    let failure: string | undefined;
    worker.on('message', (message: WorkerToMain) => {
      if (this.stopping || this.worker !== worker) return;
      if (message.type === 'batch' || message.type === 'raw') {
        const wanted = rawWanted();
        if (wanted !== raw) {
          raw = wanted;
          worker.postMessage({ type: 'raw', on: wanted } satisfies MainToWorker);
        }
        const current = this.positions.get(message.partition);
        if (current !== undefined && message.firstOffset < current) {
          // The worker starts at these positions and never goes back: a batch from below them
          // is a contract violation, never applied twice.
          worker.postMessage({ type: 'ack' } satisfies MainToWorker);
          listener.trouble(`oxbow internal assertion: Kafka worker sent partition ${message.partition} from offset ${message.firstOffset}, below ${current}`);
          return;
        }
      }
      switch (message.type) {
        case 'raw': {
          this.positions.set(message.partition, message.next);
          this.unacknowledged++;
          const batch: DecodedBatch = {
            partition: message.partition,
            rows: [],
            kinds: new Int8Array(0),
            firstOffset: message.firstOffset,
            next: message.next,
            messages: message.raw.offsets.length,
            highWatermark: message.highWatermark,
            rejects: [],
            raw: message.raw,
          };
          void listener.decoded(batch).then(() => {
            if (this.worker !== worker) return;
            this.unacknowledged--;
            worker.postMessage({ type: 'ack' } satisfies MainToWorker);
          });
          return;
        }
        case 'batch': {
          // A replayed source's row ids are set (partition and offset): its rows may stay packed.
          const packed = rowIdPosition === undefined && listener.wantsPacked?.() === true ? { count: message.count, rows: message.rows } : undefined;
          const rows = packed === undefined ? unpackRows(message) : [];
          if (rowIdPosition !== undefined) for (let i = 0; i < rows.length; i++) rows[i]![rowIdPosition] = this.nextRowId();
          this.positions.set(message.partition, message.next);
          this.unacknowledged++;
          this.fastRows += message.fastRows;
          const batch: DecodedBatch = {
            partition: message.partition,
            rows,
            kinds: message.kinds,
            firstOffset: message.firstOffset,
            next: message.next,
            messages: message.messages,
            highWatermark: message.highWatermark,
            rejects: message.rejects.map(({ offset, error, payload }) => ({ offset, error, payload: payload === null ? null : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength) })),
            packed,
          };
          void listener.decoded(batch).then(() => {
            if (this.worker !== worker) return;
            this.unacknowledged--;
            worker.postMessage({ type: 'ack' } satisfies MainToWorker);
          });
          return;
        }
        case 'trouble':
          listener.trouble(message.message);
          return;
        case 'recovered':
          listener.recovered();
          return;
        case 'highWatermark':
          listener.highWatermark(message.partition, message.offset);
          return;
      }
    });
    worker.on('error', (error) => {
      failure = error instanceof Error ? error.message : String(error);
    });
    this.exited = new Promise<void>((resolve) => {
      worker.once('exit', (code) => {
        if (this.worker === worker || this.worker === undefined) this.workerAlive = false;
        resolve();
        if (this.stopping || this.worker !== worker) return;
        listener.trouble(`Kafka worker thread for topic "${this.options.topic}" ended (${failure ?? `exit code ${code}`}); restarting it`);
        this.worker = undefined;
        this.restartTimer = setTimeout(() => {
          if (!this.stopping) this.spawn(listener);
        }, RESTART_DELAY_MS);
      });
    });
  }
}
