// Child process of crash.test.ts: commits epochs into a RocksDB state store as fast as it can,
// continuing from whatever epoch the store holds, printing "committed N" after each commit returns,
// until it is killed. Plain JavaScript over the compiled store (dist/), so it starts in a blink.
// `epochOperations(n)` is the deterministic workload both sides replay.
import { epochFromMillis } from '../../dist/sql/epoch.js';
import { type } from '../../dist/sql/types.js';

export const T0 = Date.UTC(2026, 0, 1);
export const KEYS = 500;
export const schema = { tableId: 11, columnTypes: [type('int4'), type('int4'), type('text')], primaryKey: [0], retentionMs: 10 * 365 * 86_400_000 };

export function epochOf(index) {
  return epochFromMillis(T0 + index * 1000);
}

/** The writes of epoch number `index` (1, 2, ...): upserts and deletes; every 10th epoch is big. */
export function epochOperations(index) {
  const operations = [];
  const count = index % 10 === 0 ? 1500 : 12;
  for (let j = 0; j < count; j++) {
    const key = (index * 31 + j * 7) % KEYS;
    operations.push({ kind: 'insert', row: [key, index, `v${index}.${j}:${'x'.repeat(j % 50)}`] });
  }
  if (index % 3 === 0) operations.push({ kind: 'delete', row: [(index * 13) % KEYS, null, null] });
  return operations;
}

/** The table's rows after epochs 1..index, in key order. */
export function replay(index) {
  const state = new Map();
  for (let n = 1; n <= index; n++) {
    for (const operation of epochOperations(n)) {
      if (operation.kind === 'insert') state.set(operation.row[0], operation.row);
      else state.delete(operation.row[0]);
    }
  }
  return [...state.keys()].sort((a, b) => a - b).map((key) => state.get(key));
}

if (process.argv[1] && process.argv[1].endsWith('crash-writer.mjs')) {
  const { openRocksStateStore } = await import('../../dist/storage/rocks-state-store.js');
  const store = openRocksStateStore({ dir: process.argv[2], memoryLimitBytes: 1 << 20 });
  const table = store.table(schema);
  let index = 0;
  const committed = store.committedEpoch;
  while (committed > 0n && epochOf(index) < committed) index++;
  process.stdout.write(`ready ${index}\n`);
  for (;;) {
    index++;
    for (const operation of epochOperations(index)) {
      if (operation.kind === 'insert') table.insert(operation.row);
      else table.delete(operation.row);
    }
    store.putMeta('progress', Buffer.from(String(index)));
    store.commit(epochOf(index));
    process.stdout.write(`committed ${index}\n`);
    // Uncommitted writes are in memory when the kill lands: never visible. Aborted before the next
    // epoch, so they never commit.
    table.insert([KEYS + 1, -1, 'uncommitted']);
    if (index % 5 === 0) await new Promise((resolve) => setImmediate(resolve));
    store.abort();
  }
}
