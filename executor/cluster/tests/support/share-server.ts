// What the tests of a node's share server (remote-share-server.ts) over real loopback sockets
// share: a server on a fresh data directory for the file, its log lines, and seeds of packed
// entries.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { WriteBatchBuilder } from '../../../../storage/write-batch.js';
import { RemoteShareServer } from '../../remote-share-server.js';

export interface ShareServerRig {
  /** The server (set before the file's tests run). */
  readonly server: RemoteShareServer;
  /** Its data directory. */
  readonly dir: string;
  /** The lines it logged, in order (a test may empty it). */
  readonly log: string[];
}

/**
 * A share server for the file's tests under the peer key `key`, listening on loopback with the
 * handshake deadline given; no worker script loads (a share that opens ends at once), so only the
 * handshake, the frames and the seeds' stores are under test. Closed and removed after the tests.
 */
export function useShareServer(prefix: string, key: string, handshakeTimeoutMs: number): ShareServerRig {
  let server: RemoteShareServer | undefined;
  let dir = '';
  const log: string[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    server = new RemoteShareServer({
      host: '127.0.0.1',
      dataDir: dir,
      peerKey: () => key,
      workerScript: () => new URL('file:///nonexistent.js'),
      keyedWorkerScript: () => new URL('file:///nonexistent.js'),
      log: (line) => void log.push(line),
      handshakeTimeoutMs,
    });
    await server.listen();
  });
  afterAll(async () => {
    await server?.close();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });
  return {
    get server() {
      if (server === undefined) throw new Error('the share server starts before the tests');
      return server;
    },
    get dir() {
      return dir;
    },
    log,
  };
}

/** `entries` packed entries (storage/write-batch.ts) of varied lengths. */
export function seedOf(entries: number): Buffer {
  const builder = new WriteBatchBuilder();
  for (let index = 0; index < entries; index++) builder.put(Buffer.from(`key-${index}`), Buffer.alloc(index % 97, index % 251));
  return builder.writer.copy();
}
