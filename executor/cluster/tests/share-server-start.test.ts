// A node's share server at start (remote-share-server.ts `listen`): keyed shares' stores and the
// gained vnodes' SST files live only as long as their connections, so whatever a killed run left
// under `<data-dir>/remote-keyed-shares` is removed before any connection comes; the rest of the
// data directory stays.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RemoteShareServer } from '../remote-share-server.js';

describe("a node's share server at start", () => {
  it('removes the keyed shares\' stores and gained files a killed run left, and nothing else', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-share-server-start-'));
    try {
      const shares = join(dir, 'remote-keyed-shares');
      mkdirSync(join(shares, '12'), { recursive: true });
      writeFileSync(join(shares, '12', '000009.sst'), 'left by a killed run');
      mkdirSync(join(shares, '13-gained'), { recursive: true });
      writeFileSync(join(shares, '13-gained', 'default.sst'), 'left by a killed run');
      mkdirSync(join(dir, 'db'));
      writeFileSync(join(dir, 'db', 'CURRENT'), 'the node\'s own database');
      const server = new RemoteShareServer({
        host: '127.0.0.1',
        dataDir: dir,
        peerKey: () => 'k'.repeat(64),
        workerScript: () => new URL('file:///nonexistent.js'),
        keyedWorkerScript: () => new URL('file:///nonexistent.js'),
        log: () => undefined,
      });
      expect(existsSync(shares)).toBe(true);
      await server.listen();
      try {
        expect(existsSync(shares)).toBe(false);
        expect(readdirSync(dir).sort()).toEqual(['db']);
        expect(existsSync(join(dir, 'db', 'CURRENT'))).toBe(true);
      } finally {
        await server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
