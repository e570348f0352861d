// The checkpoint identity of a local RocksDB directory, kept in `<state dir>/OXBOW-CHECKPOINT.json`
// (RocksDB ignores files it does not name): the incarnation (a random id for this lineage of the
// directory, used in remote SST keys) and, after a restore, which remote object each restored SST
// file came from, so the next checkpoint does not upload them again. Inside the state directory on
// purpose: deleting the directory deletes the identity, and a fresh directory gets a new one, so
// its file numbers (which restart at 1) can never collide with another lineage's remote files.

import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ManifestFile } from './manifest.js';

export const IDENTITY_FILE = 'OXBOW-CHECKPOINT.json';

export interface LocalIdentity {
  readonly incarnation: string;
  /** Local SST name to the remote file it was restored from. */
  readonly restoredFiles: Readonly<Record<string, ManifestFile>>;
}

export function newIncarnation(): string {
  return `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
}

export function writeIdentity(stateDir: string, identity: LocalIdentity): void {
  const path = join(stateDir, IDENTITY_FILE);
  writeFileSync(`${path}.tmp`, JSON.stringify(identity));
  renameSync(`${path}.tmp`, path);
}

/** The directory's identity, created (and written) when it has none or an unreadable one. */
export function loadOrCreateIdentity(stateDir: string): LocalIdentity {
  const path = join(stateDir, IDENTITY_FILE);
  if (existsSync(path)) {
    try {
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as LocalIdentity;
      if (typeof parsed.incarnation === 'string' && parsed.incarnation !== '') return { incarnation: parsed.incarnation, restoredFiles: parsed.restoredFiles ?? {} };
    } catch {
      // A damaged identity costs one full upload under a new incarnation, nothing more.
    }
  }
  const identity: LocalIdentity = { incarnation: newIncarnation(), restoredFiles: {} };
  writeIdentity(stateDir, identity);
  return identity;
}
