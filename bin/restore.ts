// `oxbow restore`: restores a checkpoint from the object store into a data directory by hand
// (README, "Recovery"). With no --epoch it takes the newest complete checkpoint, refusing damaged
// ones; with --epoch N exactly that one. --list prints the available checkpoints. An existing
// state directory is never overwritten silently: --force moves it aside to
// `<data-dir>/state.before-restore-<time>` first. Exit codes: 0 done, 1 failed, 2 bad usage.

import { existsSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { epochToMillis } from '../sql/epoch.js';
import { SqlError } from '../sql/errors.js';
import { decodeManifest, manifestKey } from '../storage/checkpoint/manifest.js';
import { isStateDirIntact, listCheckpointEpochs, restoreFromObjectStore } from '../storage/checkpoint/restore.js';
import { openObjectStore } from '../storage/object-store/open-object-store.js';
import { DEFAULT_OBJECT_STORE_TIMEOUT_MS, DEFAULT_RETRY_POLICY } from '../storage/object-store/retry.js';

const USAGE = 'Usage: oxbow restore --checkpoint-url URL --data-dir PATH [--epoch N] [--list] [--force] [--object-store-timeout-ms MS]';

export async function runRestore(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const given = new Map<string, string>();
  const switches = new Set<string>();
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index]!;
    if (argument === '--help' || argument === '-h') {
      process.stdout.write(`${USAGE}\n  --checkpoint-url  default $OXBOW_CHECKPOINT_URL or file://<data-dir>/checkpoints\n  --data-dir        default $OXBOW_DATA_DIR or ./oxbow-data\n  --epoch N         restore exactly this checkpoint (see --list)\n  --list            list the checkpoints in the object store and exit\n  --force           move an existing state directory aside instead of refusing\n  --object-store-timeout-ms MS  deadline of one request (a download's moves with each chunk), default $OXBOW_OBJECT_STORE_TIMEOUT_MS or 60000\n`);
      return 0;
    }
    if (argument === '--list' || argument === '--force') {
      switches.add(argument);
      continue;
    }
    const equals = argument.indexOf('=');
    const flag = equals >= 0 ? argument.slice(0, equals) : argument;
    if (flag !== '--checkpoint-url' && flag !== '--data-dir' && flag !== '--epoch' && flag !== '--object-store-timeout-ms') {
      process.stderr.write(`oxbow restore: unknown option "${flag}"\n${USAGE}\n`);
      return 2;
    }
    const value = equals >= 0 ? argument.slice(equals + 1) : argv[++index];
    if (value === undefined) {
      process.stderr.write(`oxbow restore: ${flag} needs a value\n${USAGE}\n`);
      return 2;
    }
    given.set(flag, value);
  }
  const dataDir = resolve(given.get('--data-dir') ?? env['OXBOW_DATA_DIR'] ?? './oxbow-data');
  const url = given.get('--checkpoint-url') ?? env['OXBOW_CHECKPOINT_URL'] ?? pathToFileURL(join(dataDir, 'checkpoints')).href;
  const epochText = given.get('--epoch');
  if (epochText !== undefined && !/^\d+$/.test(epochText)) {
    process.stderr.write(`oxbow restore: --epoch "${epochText}" is not an epoch number (see --list)\n`);
    return 2;
  }
  const timeoutText = given.get('--object-store-timeout-ms') ?? env['OXBOW_OBJECT_STORE_TIMEOUT_MS'];
  const timeoutMs = timeoutText === undefined || timeoutText === '' ? DEFAULT_OBJECT_STORE_TIMEOUT_MS : /^\d+$/.test(timeoutText.trim()) ? Number(timeoutText.trim()) : NaN;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    process.stderr.write(`oxbow restore: --object-store-timeout-ms "${timeoutText}" is not a positive whole number of milliseconds\n`);
    return 2;
  }
  const stateDir = join(dataDir, 'state');
  let store;
  try {
    store = await openObjectStore(url, { retry: { ...DEFAULT_RETRY_POLICY, timeoutMs } });
  } catch (error) {
    process.stderr.write(`oxbow restore: ${(error as Error).message}\n`);
    return 2;
  }
  try {
    if (switches.has('--list')) {
      for (const epoch of await listCheckpointEpochs(store)) {
        let summary: string;
        try {
          const manifest = decodeManifest(manifestKey(epoch), await store.getBytes(manifestKey(epoch)));
          summary = `${manifest.files.length} files, ${manifest.totalBytes} bytes, oxbow ${manifest.oxbowVersion}`;
        } catch (error) {
          summary = `damaged: ${(error as Error).message}`;
        }
        process.stdout.write(`${epoch}\t${new Date(epochToMillis(epoch)).toISOString()}\t${summary}\n`);
      }
      return 0;
    }
    if (existsSync(stateDir)) {
      if (!switches.has('--force') && isStateDirIntact(stateDir)) {
        process.stderr.write(`oxbow restore: ${stateDir} already holds a database; stop oxbow and pass --force to move it aside, or choose another --data-dir\n`);
        return 1;
      }
      const aside = `${stateDir}.before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(stateDir, aside);
      process.stderr.write(`oxbow restore: moved the previous state directory to ${aside}\n`);
    }
    const started = performance.now();
    const result = await restoreFromObjectStore({ objectStore: store, stateDir, ...(epochText !== undefined ? { epoch: BigInt(epochText) } : {}) });
    for (const skipped of result.skipped) process.stderr.write(`oxbow restore: skipped a damaged checkpoint: ${skipped}\n`);
    if (result.manifest === undefined) {
      process.stderr.write(`oxbow restore: ${store.location} holds no checkpoint; nothing restored\n`);
      return 1;
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    process.stdout.write(
      `restored checkpoint ${result.manifest.epoch} (${new Date(epochToMillis(BigInt(result.manifest.epoch))).toISOString()}) from ${store.location} into ${stateDir}: ${result.manifest.files.length} files, ${result.bytesDownloaded} bytes in ${seconds} s\n`,
    );
    return 0;
  } catch (error) {
    const message = error instanceof SqlError ? `${error.message}${error.hint !== undefined ? ` (hint: ${error.hint})` : ''}` : error instanceof Error ? error.message : String(error);
    process.stderr.write(`oxbow restore: ${message}\n`);
    return 1;
  } finally {
    store.close();
  }
}
