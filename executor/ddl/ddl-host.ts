// What the DDL that builds dataflows (CREATE MATERIALIZED VIEW, CREATE SINK) is given of the
// engine core (engine/engine-core.ts implements it): the store, the catalog, the row ids, the
// dataflows, the replays of sources that store no rows, the sequences, and the commit of the DDL's
// epoch.

import type { Epoch } from '../../sql/epoch.js';
import type { StateStore } from '../../storage/state-table.js';
import type { RowIdAllocator, SourceReplays } from '../batch/table-access.js';
import type { Catalog } from '../catalog/catalog.js';
import type { SequenceRuntime } from '../catalog/sequence-runtime.js';
import type { StreamManager } from '../stream/stream-manager.js';

export interface DdlHost {
  readonly store: StateStore;
  readonly catalog: Catalog;
  readonly rowIds: RowIdAllocator;
  readonly streams: StreamManager;
  readonly sourceReplays: SourceReplays;
  /** The values of sequences: ALTER SEQUENCE hands them its new options and RESTART once committed. */
  readonly sequences: SequenceRuntime;
  /** The engine's write lock: a DDL statement runs inside it. */
  readonly writeLock: { run<T>(section: () => Promise<T> | T): Promise<T> };
  /** Commits the open epoch on the main thread (inside the write lock). */
  commit(): Epoch;
}
