// The seal's batch buffers (MvccStateStore.keepOrShrink): a buffer grown by a large epoch is kept
// for the next seals while large epochs keep coming, even with small ones between them, and goes
// back to 64 KiB once a run of small epochs shows the large ones are over. Every row reads back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { epochFromMillis } from '../sql/epoch.js';
import { type } from '../sql/types.js';
import { openRocksStateStore } from './rocks-state-store.js';
import type { StateTableSchema } from './state-table.js';
import type { WriteBatchBuilder } from './write-batch.js';

const T0 = Date.UTC(2026, 0, 1);
const schema: StateTableSchema = { tableId: 5, columnTypes: [type('int4'), type('text')], primaryKey: [0] };
const SMALL = 64 * 1024;

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('batch buffers across seals', () => {
  it('keeps a large buffer while large epochs recur, and shrinks it after a run of small ones', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'oxbow-batch-buffer-'));
    directories.push(directory);
    const store = openRocksStateStore({ dir: directory });
    const spares = (): readonly WriteBatchBuilder[] => (store as unknown as { sparebatches: WriteBatchBuilder[] }).sparebatches;
    const capacities = (): number[] => spares().map((batch) => batch.writer.buffer.length);
    try {
      const table = store.table(schema);
      let second = 0;
      let id = 0;
      const epoch = async (rows: number): Promise<void> => {
        for (let index = 0; index < rows; index++, id++) table.insert([id, `row ${id} ${'x'.repeat(60)}`]);
        await store.commitAsync(epochFromMillis(T0 + ++second * 1000));
      };
      // Large (~2 MB) and one-row epochs alternate: the large buffer stays, never regrown.
      await epoch(25_000);
      const large = Math.max(...capacities());
      expect(large).toBeGreaterThan(2 * 1024 * 1024);
      const kept = spares().find((batch) => batch.writer.buffer.length === large)!.writer.buffer;
      for (let round = 0; round < 6; round++) {
        await epoch(1);
        await epoch(25_000);
        // The same Buffer, not one regrown to the same size.
        expect(spares().some((batch) => batch.writer.buffer === kept)).toBe(true);
      }
      // Small epochs only: the large buffer goes back to 64 KiB within ~40 commits.
      for (let round = 0; round < 60; round++) await epoch(1);
      expect(Math.max(...capacities())).toBe(SMALL);
      expect(table.get([0])).toEqual([0, `row 0 ${'x'.repeat(60)}`]);
      expect(table.get([id - 1])).toEqual([id - 1, `row ${id - 1} ${'x'.repeat(60)}`]);
      expect([...table.scan()].length).toBe(id);
    } finally {
      await store.close();
    }
  });
});
