// The ending every DDL statement shares: what the statement writes into the open epoch (backfills,
// state tables dropped or opened), then the next catalog staged into the same epoch and the epoch
// committed; on any error the epoch is aborted and the catalog stays as it was. The catalog
// switches only after the commit succeeded.

import type { CatalogSnapshot } from '../catalog/catalog.js';
import type { DdlHost } from './ddl-host.js';

/** Runs `work`, stages `next` and commits, in one epoch; call inside the write lock. */
export async function commitCatalog(host: DdlHost, next: CatalogSnapshot, work: () => Promise<void> | void = () => undefined): Promise<void> {
  try {
    await work();
    host.catalog.stage(host.store, next);
    host.commit();
  } catch (error) {
    host.store.abort();
    throw error;
  }
  host.catalog.install(next);
}
