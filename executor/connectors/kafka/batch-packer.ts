// A raw message batch to the packed changes a Kafka worker posts (decoded-batch.ts), in message
// order: each message of an ENCODE JSON source goes through the JSON fast path
// (json-row-packer.ts), which writes its row straight into the packed buffer; a message it
// declines (and every message of a CSV or Debezium source) is decoded by MessageDecoder and its
// rows encoded with storage's row codec. The bytes are the same either way (the fast
// path's contract), and rejected messages come only from MessageDecoder.

import type { Row } from '../../../sql/value.js';
import { ByteWriter } from '../../../storage/byte-writer.js';
import { encodeRow } from '../../../storage/row-codec.js';
import type { MessageDecoder, RejectMessage } from '../message-decoder.js';
import type { SourceLayout } from '../source-layout.js';
import type { RawMessageBatch } from '../source.js';
import type { PackedChanges } from './decoded-batch.js';
import { JsonRowPacker } from './json-row-packer.js';

export class BatchPacker {
  /** Undefined: every message takes the general path (CSV, Debezium, `fast: false`). */
  readonly fast: JsonRowPacker | undefined;
  private readonly writer = new ByteWriter(1 << 16);
  private kinds = new Int8Array(1024);
  private readonly rows: Row[] = [];
  private readonly rowKinds: number[] = [];
  private readonly out = { rows: this.rows, kinds: this.rowKinds };

  constructor(
    layout: SourceLayout,
    private readonly decoder: MessageDecoder,
    private readonly maxMessageBytes: number,
    nextRowId: (partition: number, offset: bigint) => bigint,
    options: { readonly fast?: boolean } = {},
  ) {
    this.fast = options.fast !== false && JsonRowPacker.applies(layout) ? new JsonRowPacker(layout, nextRowId) : undefined;
  }

  /** Messages [from, end) of `batch` packed into fresh transferable buffers; bad ones go to `reject`. */
  pack(batch: RawMessageBatch, from: number, reject: RejectMessage): PackedChanges {
    const { offsets, values, keys, timestamps, partition } = batch;
    const writer = this.writer;
    const fast = this.fast;
    const rows = this.rows;
    const rowKinds = this.rowKinds;
    const max = this.maxMessageBytes;
    writer.reset();
    let count = 0;
    for (let i = from; i < offsets.length; i++) {
      const value = values[i]!;
      if (count + 2 > this.kinds.length) this.grow();
      if (fast !== undefined && value !== null) {
        const key = keys[i]!;
        // An oversized message is the general path's to reject.
        if (value.length + (key?.length ?? 0) <= max && fast.pack(value, partition, offsets[i]!, timestamps[i]!, key, writer)) {
          this.kinds[count++] = 1;
          continue;
        }
      }
      rows.length = 0;
      rowKinds.length = 0;
      this.decoder.decodeMessage(batch, i, this.out, reject);
      for (let r = 0; r < rows.length; r++) {
        encodeRow(writer, rows[r]!);
        this.kinds[count++] = rowKinds[r]!;
      }
    }
    rows.length = 0;
    rowKinds.length = 0;
    // Copies of exactly the used bytes: the writer's buffer is reused.
    const packed = new Uint8Array(writer.length);
    packed.set(writer.buffer.subarray(0, writer.length));
    return { count, rows: packed, kinds: this.kinds.slice(0, count) };
  }

  private grow(): void {
    const grown = new Int8Array(this.kinds.length * 2);
    grown.set(this.kinds);
    this.kinds = grown;
  }
}
