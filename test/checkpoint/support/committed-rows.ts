// What a restored (or local) data directory holds: its committed epoch and every row of one state
// table at that epoch, read by opening the store, so a checkpoint test compares a restore with
// its model. The checkpoint and blob-file suites share it.

import type { Epoch } from '../../../sql/epoch.js';
import type { Row } from '../../../sql/value.js';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import type { StateTableSchema } from '../../../storage/state-table.js';

export async function committedRows(stateDir: string, schema: StateTableSchema): Promise<{ epoch: Epoch; rows: Row[] }> {
  const store = openRocksStateStore({ dir: stateDir, memoryLimitBytes: 0 });
  try {
    return { epoch: store.committedEpoch, rows: [...store.table(schema).scan()] };
  } finally {
    await store.close();
  }
}
