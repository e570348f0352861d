// Crash safety: a child process commits epochs into a RocksDB state store and is killed with
// SIGKILL at a random moment, 20 times in a row on the same directory. After each kill the store
// reopens with every acknowledged epoch, each committed epoch reads exactly as the deterministic
// workload says, and nothing of the epoch in flight or of uncommitted writes is visible.
// The child runs the compiled store (dist/), which `npm test` builds first.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { openRocksStateStore } from '../../storage/rocks-state-store.js';
// @ts-expect-error: plain JavaScript module shared with the child process
import { epochOf, KEYS, replay, schema } from './crash-writer.mjs';

const ROOT = resolve(import.meta.dirname, '..', '..');
const WRITER = join(ROOT, 'test', 'storage', 'crash-writer.mjs');
const dir = mkdtempSync(join(tmpdir(), 'oxbow-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  acknowledged: number;
  started: number;
}

/** Starts the writer, kills it `delayMs` after it is ready, reports what it acknowledged. */
function runAndKill(delayMs: number): Promise<Run> {
  return new Promise((resolveRun, rejectRun) => {
    const child = spawn(process.execPath, [WRITER, dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let errors = '';
    let started = -1;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => (errors += text));
    child.stdout.on('data', (text: string) => {
      output += text;
      const ready = /^ready (\d+)$/m.exec(output);
      if (started < 0 && ready !== null) {
        started = Number(ready[1]);
        setTimeout(() => child.kill('SIGKILL'), delayMs);
      }
    });
    child.on('exit', (_code, signal) => {
      if (signal !== 'SIGKILL') {
        rejectRun(new Error(`writer exited without being killed: ${errors}`));
        return;
      }
      const acknowledged = [...output.matchAll(/^committed (\d+)$/gm)].map((match) => Number(match[1]));
      resolveRun({ acknowledged: acknowledged.length > 0 ? Math.max(...acknowledged) : started, started });
    });
  });
}

describe('crash safety under SIGKILL', () => {
  it('keeps every committed epoch exactly, 20 kills in a row', async () => {
    expect(existsSync(join(ROOT, 'dist', 'storage', 'rocks-state-store.js')), 'run `npm run build` first').toBe(true);
    const delays = fc.sample(fc.integer({ min: 20, max: 400 }), { numRuns: 20, seed: 4 });
    let previous = 0;
    for (const delayMs of delays) {
      const run = await runAndKill(delayMs);
      expect(run.started).toBe(previous);
      const store = openRocksStateStore({ dir, memoryLimitBytes: 1 << 20 });
      try {
        const table = store.table(schema);
        let committed = 0;
        while (epochOf(committed + 1) <= store.committedEpoch) committed++;
        expect(epochOf(committed)).toBe(committed === 0 ? epochOf(0) : store.committedEpoch);
        // Every acknowledged commit survived; at most the one in flight completed unacknowledged.
        expect(committed).toBeGreaterThanOrEqual(run.acknowledged);
        expect(committed).toBeLessThanOrEqual(run.acknowledged + 1);
        expect(Buffer.from(store.getMeta('progress') ?? []).toString()).toBe(committed === 0 ? '' : String(committed));
        const latest = [...table.scan()];
        expect(latest).toEqual(replay(committed));
        expect(latest.some((row) => row[0] === KEYS + 1)).toBe(false);
        // Earlier committed epochs read exactly as they did.
        for (const index of new Set([1, Math.max(1, committed - 1), Math.max(1, Math.floor(committed / 2)), previous].filter((n) => n >= 1 && n <= committed))) {
          expect([...table.scan({ epoch: epochOf(index) })]).toEqual(replay(index));
        }
        // No version of any key is newer than the committed epoch.
        for (const version of table.versions(epochOf(0), epochOf(committed + 1000), { start: [0], end: [40] })) expect(version.validFrom <= store.committedEpoch).toBe(true);
        previous = committed;
      } finally {
        await store.close();
      }
    }
    expect(previous).toBeGreaterThan(20);
    if (process.env.OXBOW_PRINT_CRASH) console.log(`committed epochs after 20 kills: ${previous}`);
  }, 120_000);
});
