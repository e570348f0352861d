// The source contract, owned by its consumer (the source manager): what a connector hands over and
// what it must support. A connector only moves raw messages; decoding, offset bookkeeping and the
// epoch commit are the manager's, so every connector gets exactly-once for free as long as it can
// (1) start each partition at a given offset and (2) report each message's partition and offset.
//
// Messages travel in batches of parallel arrays (one array per field), not an object per message,
// so the hot path allocates per batch, not per row.

/** A batch of raw messages from one partition, in offset order. */
export interface RawMessageBatch {
  readonly partition: number;
  /** Offsets as bigint (Kafka offsets are int64). */
  readonly offsets: bigint[];
  /** Milliseconds since 1970 (the message's timestamp). */
  readonly timestamps: number[];
  readonly keys: (Buffer | null)[];
  readonly values: (Buffer | null)[];
  /** The partition's high watermark when the batch was fetched (the offset after the last message). */
  readonly highWatermark: bigint;
}

/** Where each partition resumes: the next offset to read, by partition. */
export type PartitionOffsets = ReadonlyMap<number, bigint>;

export interface SourceListener {
  /**
   * A batch arrived. The returned promise resolves when the manager has room for more; a
   * connector awaits it before fetching again (backpressure).
   */
  batch(batch: RawMessageBatch): Promise<void>;
  /** The connection or the topic is in trouble (unreachable broker, deleted topic); keeps retrying. */
  trouble(message: string): void;
  /** The trouble is over: messages flow again. */
  recovered(): void;
  /** A partition's high watermark (also when no message arrives). */
  highWatermark(partition: number, offset: bigint): void;
}

/** One running connector instance. */
export interface SourceReader {
  /**
   * Starts reading. `resume` holds the next offset of every partition known at the last commit;
   * a partition not in it starts where the source's startup mode says (a new partition: earliest).
   */
  start(resume: PartitionOffsets, listener: SourceListener): Promise<void>;
  /** Stops reading and releases connections. */
  stop(): Promise<void>;
}

/** Resolves startup offsets for partitions a source has never committed (first start). */
export interface StartupResolver {
  startOffsets(): Promise<Map<number, bigint>>;
}
