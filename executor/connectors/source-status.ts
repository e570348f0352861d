// What the sources tell the operator, kept in memory per process: every rejected message (source,
// partition, offset, error, a prefix of the payload) and connection trouble, for
// oxbow_catalog.source_errors; per partition the committed offset, the high watermark and the lag,
// for oxbow_catalog.source_partitions; totals for Prometheus (source-metrics.ts). Counts restart at
// zero with the process; the data itself is durable.

/** Payload bytes kept per rejected message. */
export const PAYLOAD_PREFIX_BYTES = 256;
/** Rejected messages kept per source (the oldest are dropped; the count keeps counting). */
const ERRORS_PER_SOURCE_LIMIT = 1000;

export interface SourceErrorRecord {
  readonly sourceId: number;
  /** null for connection trouble (not about one message). */
  readonly partition: number | null;
  readonly offset: bigint | null;
  readonly error: string;
  readonly payload: string | null;
  /** Microseconds since 1970. */
  readonly atMicros: number;
}

export interface PartitionStatus {
  readonly sourceId: number;
  readonly topic: string;
  readonly partition: number;
  /** The next offset to read, as committed with the last epoch (-1n before any commit). */
  committedOffset: bigint;
  highWatermark: bigint;
  messages: number;
  errors: number;
}

export class SourceStatus {
  private readonly errors = new Map<number, SourceErrorRecord[]>();
  private readonly errorCounts = new Map<number, number>();
  private readonly partitions = new Map<number, Map<number, PartitionStatus>>();
  private readonly trouble = new Map<number, string>();
  private readonly names = new Map<number, string>();

  /** The source's qualified name, for metrics labels. */
  named(sourceId: number, name: string): void {
    this.names.set(sourceId, name);
  }

  nameOf(sourceId: number): string {
    return this.names.get(sourceId) ?? String(sourceId);
  }

  reject(sourceId: number, partition: number, offset: bigint, error: string, payload: Buffer | null): void {
    this.add({
      sourceId,
      partition,
      offset,
      error,
      payload: payload === null ? null : payload.subarray(0, PAYLOAD_PREFIX_BYTES).toString('utf8').replace(/\uFFFD+$/, ''),
      atMicros: Date.now() * 1000,
    });
    this.partition(sourceId, '', partition).errors++;
  }

  /**
   * Messages of a partition that a Kafka source fragment's owner fetched itself and answered
   * (`fetched` pairs of partition and messages: executor/cluster/README.md, "Kafka partitions
   * fetched by the nodes"), counted when its epoch batch comes rather than when the range is
   * handed out. A source no longer known (dropped since) counts nothing.
   */
  fetched(sourceId: number, pairs: readonly number[]): void {
    const byPartition = this.partitions.get(sourceId);
    if (byPartition === undefined) return;
    for (let at = 0; at + 1 < pairs.length; at += 2) this.partition(sourceId, '', pairs[at]!).messages += pairs[at + 1]!;
  }

  /** Connection trouble: recorded once per distinct message while it lasts. */
  troubled(sourceId: number, message: string): boolean {
    if (this.trouble.get(sourceId) === message) return false;
    this.trouble.set(sourceId, message);
    this.add({ sourceId, partition: null, offset: null, error: message, payload: null, atMicros: Date.now() * 1000 });
    return true;
  }

  recovered(sourceId: number): void {
    this.trouble.delete(sourceId);
  }

  /** The current trouble of a source, if any. */
  troubleOf(sourceId: number): string | undefined {
    return this.trouble.get(sourceId);
  }

  private add(record: SourceErrorRecord): void {
    let list = this.errors.get(record.sourceId);
    if (list === undefined) this.errors.set(record.sourceId, (list = []));
    list.push(record);
    if (list.length > ERRORS_PER_SOURCE_LIMIT) list.splice(0, list.length - ERRORS_PER_SOURCE_LIMIT);
    this.errorCounts.set(record.sourceId, (this.errorCounts.get(record.sourceId) ?? 0) + 1);
  }

  partition(sourceId: number, topic: string, partition: number): PartitionStatus {
    let byPartition = this.partitions.get(sourceId);
    if (byPartition === undefined) this.partitions.set(sourceId, (byPartition = new Map()));
    let status = byPartition.get(partition);
    if (status === undefined) {
      status = { sourceId, topic, partition, committedOffset: -1n, highWatermark: -1n, messages: 0, errors: 0 };
      byPartition.set(partition, status);
    } else if (status.topic === '' && topic !== '') {
      status = { ...status, topic };
      byPartition.set(partition, status);
    }
    return status;
  }

  forget(sourceId: number): void {
    this.errors.delete(sourceId);
    this.errorCounts.delete(sourceId);
    this.partitions.delete(sourceId);
    this.trouble.delete(sourceId);
  }

  errorRecords(): SourceErrorRecord[] {
    return [...this.errors.values()].flat();
  }

  errorCount(sourceId: number): number {
    return this.errorCounts.get(sourceId) ?? 0;
  }

  partitionRecords(): PartitionStatus[] {
    return [...this.partitions.values()].flatMap((byPartition) => [...byPartition.values()].sort((a, b) => a.partition - b.partition));
  }

  sourceIds(): number[] {
    return [...new Set([...this.partitions.keys(), ...this.errors.keys()])];
  }
}

/** Lag of a partition: messages in the broker not yet committed (0 when unknown). */
export function lagOf(status: PartitionStatus): bigint {
  if (status.highWatermark < 0n || status.committedOffset < 0n) return status.highWatermark < 0n ? 0n : status.highWatermark;
  const lag = status.highWatermark - status.committedOffset;
  return lag > 0n ? lag : 0n;
}
