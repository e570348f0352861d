// The complete checkpoints a cluster test's checkpoint folder holds (storage/checkpoint/manifest.ts),
// read as the leader writes and retention deletes them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeManifest, type CheckpointManifest } from '../../storage/checkpoint/manifest.js';

/** The complete checkpoints in `folder`, oldest first (one that retention deletes meanwhile left out). */
export function manifests(folder: string): CheckpointManifest[] {
  const dir = join(folder, 'manifests');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      let bytes: Buffer;
      try {
        bytes = readFileSync(join(dir, name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      return [decodeManifest(`manifests/${name}`, bytes)];
    });
}
