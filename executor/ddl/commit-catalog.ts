// The ending every DDL statement shares: what the statement writes into the open epoch (backfills,
// state tables dropped or opened), then the next catalog staged into the same epoch and the epoch
// committed; on any error the epoch is aborted and the catalog stays as it was. The catalog
// switches only after the commit succeeded. The objects a statement creates are owned by its role.

import { BOOTSTRAP_ROLE_ID, type CatalogSnapshot } from '../catalog/catalog.js';
import { withCreatedObjectsOwned } from '../catalog/privileges.js';
import type { DdlHost } from './ddl-host.js';

/**
 * Runs `work`, stages `next` and commits, in one epoch; call inside the write lock. The objects
 * `next` adds are owned by `owner` (the statement's current role).
 */
export async function commitCatalog(host: DdlHost, created: CatalogSnapshot, work: () => Promise<void> | void = () => undefined, owner = BOOTSTRAP_ROLE_ID): Promise<void> {
  const next = withCreatedObjectsOwned(host.catalog.snapshot, created, owner);
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
