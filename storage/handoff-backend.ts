// The backend of a state store in a worker thread (a worker of a parallel dataflow,
// executor/stream/PARALLEL.md): reads go to the RocksDB the main thread opened and shared
// (RocksDatabase.attach), writes do not. Each sealed epoch's batch, without the store records
// (committed epoch, table windows, metadata: the main thread's store owns those), is handed to
// `handoff`, which takes it to the main thread; the main thread writes it in the same WriteBatch as
// its own epoch, so every thread's writes of an epoch commit atomically, and `handoff`'s Promise
// settles when that write is durable or failed. The store starts each epoch's handoff at once
// (`ordersWrites`): the main thread asks for an epoch's batch while earlier ones are in flight.

import type { Epoch } from '../sql/epoch.js';
import { SYSTEM_TABLE_ID } from './mvcc-key.js';
import { RocksBackend } from './rocks-backend.js';
import type { RocksDatabase } from './rocksdb.js';

export class HandoffBackend extends RocksBackend {
  readonly ordersWrites = true;

  constructor(
    database: RocksDatabase,
    private readonly handoff: (packed: Buffer) => Promise<void>,
  ) {
    super(database);
  }

  override checkWritable(): void {
    // The main thread checks the disk for the whole batch.
  }

  override write(packed: Buffer): void {
    void this.writeAsync(packed);
  }

  override writeAsync(packed: Buffer): Promise<void> {
    return this.handoff(withoutStoreRecords(packed));
  }

  override setRetentionWatermark(_tableId: number, _epoch: Epoch): void {
    // The main thread's store moves the windows of every table (its records are the ones kept).
  }

  override async close(): Promise<void> {
    await this.database.close();
  }
}

/**
 * A copy of a packed batch (write-batch.ts: [op][u32le key length][key][u32le value length][value])
 * without the entries under the store-record table id, in its own ArrayBuffer (transferable). The
 * entries between two store records go in one copy: a worker's epoch is its rows' entries with the
 * store's records after them, so a batch costs a walk over its lengths and about one memcpy, not a
 * native call per row.
 */
export function withoutStoreRecords(packed: Buffer): Buffer {
  const out = Buffer.allocUnsafeSlow(packed.length);
  let length = 0;
  let offset = 0;
  let runStart = 0;
  while (offset < packed.length) {
    const keyStart = offset + 5;
    const keyLength = packed.readUInt32LE(offset + 1);
    const valueAt = keyStart + keyLength;
    const end = valueAt + 4 + packed.readUInt32LE(valueAt);
    if (keyLength >= 4 && packed.readUInt32BE(keyStart) === SYSTEM_TABLE_ID) {
      if (offset > runStart) length += packed.copy(out, length, runStart, offset);
      runStart = end;
    }
    offset = end;
  }
  if (offset > runStart) length += packed.copy(out, length, runStart, offset);
  return out.subarray(0, length);
}
