// A worker's epoch batch without the store's records (handoff-backend.ts `withoutStoreRecords`):
// the same entries, in order, as filtering them one by one, wherever the records fall (first,
// between rows, last, every entry, none), in a buffer of its own.

import { describe, expect, it } from 'vitest';
import { WriteBatchBuilder, forEachBatchEntry } from './write-batch.js';
import { withoutStoreRecords } from './handoff-backend.js';
import { SYSTEM_TABLE_ID } from './mvcc-key.js';

function key(tableId: number, n: number): Buffer {
  const out = Buffer.alloc(8 + (n % 5));
  out.writeUInt32BE(tableId >>> 0, 0);
  out.writeUInt32BE(n, 4);
  return out;
}

/** The kept entries as [operation, key, value] in hex. */
function entries(packed: Buffer, keep: (key: Buffer) => boolean): string[] {
  const out: string[] = [];
  forEachBatchEntry(packed, (operation, buffer, keyStart, keyEnd, valueStart, valueEnd) => {
    const k = buffer.subarray(keyStart, keyEnd);
    if (keep(k)) out.push(`${operation} ${k.toString('hex')} ${buffer.subarray(valueStart, valueEnd).toString('hex')}`);
  });
  return out;
}

const isRecord = (k: Buffer) => k.length >= 4 && k.readUInt32BE(0) === SYSTEM_TABLE_ID;

describe('withoutStoreRecords', () => {
  const layouts: Record<string, (i: number) => boolean> = {
    'records last': (i) => i >= 90,
    'records first': (i) => i < 3,
    'records between rows': (i) => i % 7 === 3,
    'only records': () => true,
    'no records': () => false,
  };
  for (const [name, recordAt] of Object.entries(layouts)) {
    it(name, () => {
      const batch = new WriteBatchBuilder();
      for (let i = 0; i < 100; i++) {
        const k = key(recordAt(i) ? SYSTEM_TABLE_ID : 7, i);
        if (i % 11 === 5) batch.delete(k);
        else batch.put(k, Buffer.from('v'.repeat(i % 13)));
      }
      // A short key (under four bytes) is never a record.
      batch.put(Buffer.from([0xff, 0xff]), Buffer.from('x'));
      const packed = batch.view();
      const out = withoutStoreRecords(packed);
      expect(entries(out, () => true)).toEqual(entries(packed, (k) => !isRecord(k)));
      expect(out.buffer).not.toBe(packed.buffer);
      expect(out.byteOffset).toBe(0);
    });
  }
});
