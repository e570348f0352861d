// A pool thread with no job left ends by itself (worker-pool.ts' `end`, pool-worker.ts' `exit`):
// asked to, it closes its port and its event loop runs out, with exit code 0; terminated, a thread
// exits with code 1. Only a thread that does not end within the deadline is terminated (`forced`).
// The job scripts are made here; the pool's worker script is the build's (npm run build first).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkerPool } from '../worker-pool.js';

const dir = mkdtempSync(join(tmpdir(), 'oxbow-pool-end-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A job that answers and ends; its module keeps nothing alive. */
const quiet = join(dir, 'quiet.mjs');
writeFileSync(quiet, `export function runJob(data, end) { data.port.postMessage('done'); data.port.close(); end(); }\n`);
/** A module that keeps its thread's event loop alive for good (a timer never cleared). */
const busy = join(dir, 'busy.mjs');
writeFileSync(busy, `setInterval(() => undefined, 1000);\nexport function runJob(data, end) { data.port.close(); end(); }\n`);

/** The exit codes of the pool's threads, in the order they exit (Worker is patched for the test's pools only). */
function exitCodes(pool: WorkerPool): number[] {
  const codes: number[] = [];
  const start = (pool as unknown as { start(): { worker: Worker } }).start.bind(pool);
  (pool as unknown as { start(): { worker: Worker } }).start = () => {
    const thread = start();
    thread.worker.on('exit', (code) => codes.push(code));
    return thread;
  };
  return codes;
}

async function runOnce(pool: WorkerPool, script: string): Promise<void> {
  const channel = new MessageChannel();
  const answered = new Promise((resolve) => channel.port1.once('message', resolve));
  const job = pool.run(pathToFileURL(script), { port: channel.port2, signal: new SharedArrayBuffer(8) }, [channel.port2], (error) => {
    throw error;
  });
  if (script === quiet) await answered;
  await job.ended;
  channel.port1.close();
}

describe('a pool thread with no job left', () => {
  it('ends by itself when freed beyond the idle bound and at close, never terminated', async () => {
    const pool = new WorkerPool({}, 1);
    const codes = exitCodes(pool);
    // Two jobs at once: two threads; once both are free, one is beyond the bound of 1 and ends.
    await Promise.all([runOnce(pool, quiet), runOnce(pool, quiet)]);
    expect(pool.started).toBe(2);
    const deadline = Date.now() + 30_000;
    while (codes.length < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(codes).toEqual([0]);
    expect(pool.idle).toBe(1);
    await pool.close();
    expect(codes).toEqual([0, 0]);
    expect(pool.forced).toBe(0);
  }, 60_000);

  it('is terminated when it does not end within the deadline, and close still returns', async () => {
    const pool = new WorkerPool({}, 2);
    const codes = exitCodes(pool);
    pool.warm(pathToFileURL(busy));
    await runOnce(pool, busy);
    expect(pool.idle).toBe(1);
    await pool.close();
    expect(pool.forced).toBe(1);
    expect(codes).toEqual([1]);
  }, 60_000);
});
