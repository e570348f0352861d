// One partition's fetched messages as transferable buffers (executor/stream/PARALLEL.md, "Kafka
// sources"): while only Kafka source fragments read a source that stores no rows, its Kafka worker
// posts the messages undecoded and the fragment's worker owning the partition decodes them. Offsets,
// timestamps, key and value lengths (-1: null) in typed arrays, the keys and values back to back in
// one byte buffer; nothing per message crosses a thread.

import type { RawMessages } from '../../stream/stream-context.js';
import type { RawMessageBatch } from '../source.js';

/** Messages [from..] of `batch`, packed into fresh buffers. */
export function packRaw(batch: RawMessageBatch, from: number): RawMessages {
  const count = batch.offsets.length - from;
  const offsets = new BigInt64Array(count);
  const timestamps = new Float64Array(count);
  const keyLengths = new Int32Array(count);
  const valueLengths = new Int32Array(count);
  let size = 0;
  for (let i = 0; i < count; i++) size += (batch.keys[from + i]?.length ?? 0) + (batch.values[from + i]?.length ?? 0);
  const bytes = new Uint8Array(size);
  let at = 0;
  for (let i = 0; i < count; i++) {
    offsets[i] = batch.offsets[from + i]!;
    timestamps[i] = batch.timestamps[from + i]!;
    const key = batch.keys[from + i];
    const value = batch.values[from + i];
    keyLengths[i] = key === null || key === undefined ? -1 : key.length;
    if (key !== null && key !== undefined) {
      bytes.set(key, at);
      at += key.length;
    }
    valueLengths[i] = value === null || value === undefined ? -1 : value.length;
    if (value !== null && value !== undefined) {
      bytes.set(value, at);
      at += value.length;
    }
  }
  return { offsets, timestamps, keyLengths, valueLengths, bytes };
}

/** The buffers of `raw`, to transfer. */
export function rawBuffers(raw: RawMessages): ArrayBuffer[] {
  return [raw.offsets.buffer, raw.timestamps.buffer, raw.keyLengths.buffer, raw.valueLengths.buffer, raw.bytes.buffer] as ArrayBuffer[];
}

/** A copy of `raw` (a second fragment reading the same source gets its own buffers). */
export function copyRaw(raw: RawMessages): RawMessages {
  return { offsets: raw.offsets.slice(), timestamps: raw.timestamps.slice(), keyLengths: raw.keyLengths.slice(), valueLengths: raw.valueLengths.slice(), bytes: raw.bytes.slice() };
}

/** The messages of `raw` as the decoders take them (keys and values are views of its byte buffer). */
export function unpackRaw(partition: number, raw: RawMessages, highWatermark: bigint): RawMessageBatch {
  const count = raw.offsets.length;
  const offsets = new Array<bigint>(count);
  const timestamps = new Array<number>(count);
  const keys = new Array<Buffer | null>(count);
  const values = new Array<Buffer | null>(count);
  const bytes = Buffer.from(raw.bytes.buffer, raw.bytes.byteOffset, raw.bytes.byteLength);
  let at = 0;
  for (let i = 0; i < count; i++) {
    offsets[i] = raw.offsets[i]!;
    timestamps[i] = raw.timestamps[i]!;
    const keyLength = raw.keyLengths[i]!;
    keys[i] = keyLength < 0 ? null : bytes.subarray(at, (at += keyLength));
    const valueLength = raw.valueLengths[i]!;
    values[i] = valueLength < 0 ? null : bytes.subarray(at, (at += valueLength));
  }
  return { partition, offsets, timestamps, keys, values, highWatermark };
}
