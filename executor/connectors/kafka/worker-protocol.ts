// The messages between a Kafka source's worker thread (kafka-worker.ts) and its main-thread reader
// (kafka-worker-reader.ts). Everything here is structured-cloneable; a batch's two buffers are
// transferred (see decoded-batch.ts), the rest of a batch message is a few scalars and the
// rejected messages (rare, each with a payload prefix).

import type { RelationDef } from '../../../sql/catalog.js';
import type { KafkaOptions } from './kafka-options.js';
import type { RawMessages } from '../../stream/stream-context.js';

/** What the worker is started with (`workerData`). */
export interface KafkaWorkerData {
  readonly relation: RelationDef;
  readonly options: KafkaOptions;
  /** `schema.name`, for the client and group ids. */
  readonly name: string;
  /** Next offset to read per partition. */
  readonly resume: readonly (readonly [number, bigint])[];
  /** Batches the worker may post before it waits for the main thread to consume one. */
  readonly maxBatchesInFlight: number;
  /** FORMAT PLAIN ENCODE JSON through the fast packer (json-row-packer.ts). */
  readonly fastJson: boolean;
  /** Post batches undecoded from the start (only Kafka source fragments read the source); `raw` messages change it. */
  readonly raw: boolean;
}

export interface RejectedMessage {
  readonly offset: bigint;
  readonly error: string;
  /** The first PAYLOAD_PREFIX_BYTES bytes of the value (null: no value). */
  readonly payload: Uint8Array | null;
}

export type WorkerToMain =
  | {
      readonly type: 'batch';
      readonly partition: number;
      /** Offset of the batch's first message, and the offset after its last (rejected messages included). */
      readonly firstOffset: bigint;
      readonly next: bigint;
      readonly messages: number;
      readonly highWatermark: bigint;
      readonly count: number;
      readonly rows: Uint8Array;
      readonly kinds: Int8Array;
      readonly rejects: readonly RejectedMessage[];
      /** Rows of this batch the JSON fast path packed (json-row-packer.ts); the rest took MessageDecoder. */
      readonly fastRows: number;
    }
  /** Messages [firstOffset, next) of a partition undecoded (raw-batch.ts): only Kafka source fragments read the source. */
  | { readonly type: 'raw'; readonly partition: number; readonly firstOffset: bigint; readonly next: bigint; readonly highWatermark: bigint; readonly raw: RawMessages }
  | { readonly type: 'trouble'; readonly message: string }
  | { readonly type: 'recovered' }
  | { readonly type: 'highWatermark'; readonly partition: number; readonly offset: bigint };

/** `raw`: post batches undecoded (`on`) or decoded from now on. */
export type MainToWorker = { readonly type: 'ack' } | { readonly type: 'stop' } | { readonly type: 'raw'; readonly on: boolean };
