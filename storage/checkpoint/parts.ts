// Other nodes' keyed share stores taken into this node's database (executor/cluster/README.md, "Each
// node owning its vnodes' state", step 5): a checkpoint's parts (manifest.ts' `ManifestPart`) name,
// for each store, the vnodes its share owned and the fragment's state tables keyed by vnode, so
// each vnode is one key range per table. Taking a part replaces those ranges here with the part's
// entries as of the checkpoint's epoch: the ranges are range-deleted, then the part's copy of them
// (RocksDB `exportRanges` without the versions past the epoch: a store is cut after the leader's
// cut, perhaps with some later batches) is ingested, newer than everything here. Nothing goes
// through the memtable, and nothing of another vnode, another table or the store's records moves.

import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Epoch } from '../../sql/epoch.js';
import { vnodeRunRanges } from '../mvcc-key.js';
import { tableRecordKey } from '../mvcc-state-store.js';
import { RocksDatabase } from '../rocksdb.js';
import { WriteBatchBuilder } from '../write-batch.js';
import type { ManifestPart } from './manifest.js';

export interface PartsTaken {
  /** Parts whose vnodes were taken. */
  readonly parts: number;
  /** Parts left out: an older view's (no table keyed by vnode), one owning no vnode, or one whose tables this database no longer holds. */
  readonly skipped: number;
  /** Key ranges replaced, and the entries and bytes of the files ingested for them. */
  readonly ranges: number;
  readonly entries: number;
  readonly bytes: number;
}

/** The key ranges of a part's vnodes in its tables keyed by vnode, in key order. */
export function partRanges(part: ManifestPart): { lower: Buffer; upper: Buffer }[] {
  const flags = new Uint8Array(256);
  for (const vnode of part.vnodes) flags[vnode] = 1;
  return [...(part.tables ?? [])].sort((a, b) => a - b).flatMap((tableId) => vnodeRunRanges(tableId, flags));
}

/**
 * Replaces, in `database`, each part's vnodes of its tables keyed by vnode with the part's entries
 * as of `epoch`. `materialize(part, dir)` puts the part's store into `dir` (which must not exist:
 * a followed checkpoint's files linked, or a download); each is removed once its ranges are copied
 * out. `workDir` is removed first and at the end. A part whose tables `database` has no record of
 * (its view dropped by then) is left out when `leaveOutDropped` (a promotion's checkpoint); a
 * running share's tables need no such check.
 */
export async function takeParts(
  database: RocksDatabase,
  parts: readonly ManifestPart[],
  epoch: Epoch,
  workDir: string,
  materialize: (part: ManifestPart, dir: string) => Promise<unknown>,
  leaveOutDropped = true,
): Promise<PartsTaken> {
  await rm(workDir, { recursive: true, force: true });
  await mkdir(workDir, { recursive: true });
  let taken = 0;
  let skipped = 0;
  let rangesTaken = 0;
  let entries = 0;
  let bytes = 0;
  try {
    for (const [index, part] of parts.entries()) {
      const ranges = partRanges(part);
      if (ranges.length === 0 || (leaveOutDropped && (part.tables ?? []).some((tableId) => database.get(tableRecordKey(tableId)) === undefined))) {
        skipped++;
        continue;
      }
      const storeDir = join(workDir, `part-${index}`);
      const exportDir = join(workDir, `files-${index}`);
      await materialize(part, storeDir);
      await mkdir(exportDir);
      const store = RocksDatabase.open(storeDir, { readOnly: true });
      let files;
      try {
        files = await store.exportRanges(exportDir, ranges, undefined, epoch);
      } finally {
        await store.close();
      }
      await rm(storeDir, { recursive: true, force: true });
      // The ranges' entries here go first (a key the node deleted and compacted away would read
      // again), then the part's, ingested above that delete.
      const deletes = new WriteBatchBuilder();
      for (const range of ranges) deletes.deleteRange(range.lower, range.upper);
      await database.writeAsync(Buffer.from(deletes.view()), true);
      if (files.length > 0) await database.ingest(files);
      await rm(exportDir, { recursive: true, force: true });
      taken++;
      rangesTaken += ranges.length;
      for (const file of files) {
        entries += file.entries;
        bytes += file.bytes;
      }
    }
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
  return { parts: taken, skipped, ranges: rangesTaken, entries, bytes };
}
