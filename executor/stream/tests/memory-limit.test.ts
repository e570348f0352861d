// Memory: a view whose state is more than 4x --memory-limit (2 MiB here, to stay fast on a loaded
// CI machine; the mechanism does not depend on the size) keeps running on the
// RocksDB store and stays equal to its query recomputed in batch. The state's size is measured, not
// assumed: the view's own rows carry more than 4x the limit of payload (sum of octet_length), and its
// join keeps the same rows again. The store's memory tier stays within the limit and evicts (the
// rest is read back from RocksDB).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openRocksStateStore } from '../../../storage/rocks-state-store.js';
import { openHarness, type Harness } from './stream-harness.js';

const LIMIT = 2 * 1024 * 1024;
const ROWS = 5_000;
const PAD = 2_000;

const dir = mkdtempSync(join(tmpdir(), 'oxbow-memory-limit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const QUERY = 'select t.k, t.pad, u.name from t join u on t.g = u.g';
/** A fingerprint of a row set: count, key sum, payload bytes, and a digest of every row in key order. */
const fingerprint = (from: string) => `select count(*), sum(k), sum(octet_length(pad)), md5(string_agg(k || ':' || name || ':' || md5(pad), ',' order by k)) from (${from}) x`;

describe('a view with state beyond the memory limit', () => {
  it('keeps running and equals its batch recomputation', async () => {
    const store = openRocksStateStore({ dir, retentionMs: 600_000, memoryLimitBytes: LIMIT });
    const h: Harness = await openHarness(store);
    try {
      await h.run("create table u (g int primary key, name text); insert into u select i, 'group ' || i from generate_series(0, 9) as s(i)");
      await h.run('create table t (k int primary key, g int, pad text)');
      await h.run(`insert into t select i, i % 10, repeat(chr(65 + i % 26), ${PAD - 8}) || lpad(i::text, 8, '0') from generate_series(0, ${ROWS - 1}) as s(i)`);
      await h.run(`create materialized view wide as ${QUERY}`);
      const payload = Number((await h.lines('select sum(octet_length(pad)) from wide'))[0]);
      expect(payload).toBeGreaterThan(4 * LIMIT);
      const check = async (step: string) => {
        expect(await h.lines(fingerprint('select * from wide')), step).toEqual(await h.lines(fingerprint(QUERY)));
        const memory = store.memoryStats();
        expect(memory.usedBytes, `memory tier after ${step}`).toBeLessThanOrEqual(LIMIT);
      };
      await check('backfill');
      await h.run('update t set g = (g + 1) % 10 where k % 7 = 0');
      await check('moving rows between join keys');
      await h.run("update u set name = name || '!' where g = 3");
      await check('renaming a group (every row of its key changes)');
      await h.run('delete from t where k % 5 = 0');
      await check('deleting a fifth');
      await h.run(`insert into t select i, i % 10, repeat('z', ${PAD}) from generate_series(${ROWS}, ${ROWS + 499}) as s(i)`);
      await check('inserting more');
      expect(store.memoryStats().evictions).toBeGreaterThan(0);
    } finally {
      await h.close();
    }
  }, 180_000);
});
