// A pool thread warmed for a job known to come (worker-pool.ts' `warm`, pool-worker.ts' `load`):
// the thread starts and loads the job's script with no job, and the job then runs on that thread,
// the script's module evaluated once. A job script made in the test appends a line to a file each
// time its module is evaluated and answers its job with that count; the pool's worker script is the
// build's (npm run build first).
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkerPool } from '../worker-pool.js';

const dir = mkdtempSync(join(tmpdir(), 'oxbow-pool-warm-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const marks = join(dir, 'evaluated.txt');
const script = join(dir, 'job.mjs');
writeFileSync(
  script,
  `import { appendFileSync, readFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(marks)}, 'evaluated\\n');
export function runJob(data, end) {
  data.port.postMessage({ evaluated: readFileSync(${JSON.stringify(marks)}, 'utf8').split('\\n').filter(Boolean).length });
  data.port.close();
  end();
}
`,
);

async function eventually(what: string, probe: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`${what} within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a warmed pool thread', () => {
  it("loads its script before any job, and runs the script's job without loading it again", async () => {
    const pool = new WorkerPool({}, 2);
    try {
      const url = pathToFileURL(script);
      pool.warm(url);
      expect([pool.started, pool.idle, pool.jobs]).toEqual([1, 1, 0]);
      // The module is evaluated on the warmed thread with no job run.
      await eventually('the warmed thread never loaded the script', () => existsSync(marks));
      expect(readFileSync(marks, 'utf8')).toBe('evaluated\n');

      const channel = new MessageChannel();
      const answer = new Promise<{ evaluated: number }>((resolve) => channel.port1.once('message', resolve));
      const job = pool.run(url, { port: channel.port2, signal: new SharedArrayBuffer(8) }, [channel.port2], (error) => {
        throw error;
      });
      expect((await answer).evaluated).toBe(1);
      await job.ended;
      channel.port1.close();
      // No other thread started: the job ran on the warmed one, which is idle again.
      expect([pool.started, pool.idle, pool.jobs]).toEqual([1, 1, 1]);
      // At most maxIdle threads wait idle: a warm beyond them starts none.
      pool.warm(url);
      pool.warm(url);
      expect([pool.started, pool.idle]).toEqual([2, 2]);
    } finally {
      await pool.close();
    }
  });
});
