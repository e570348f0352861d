// A real oxbow server process for the benchmarks that measure over the wire: the built CLI (`entry`,
// this checkout's or another's dist/bin/oxbow.js) on a free loopback port with a fresh data
// directory, its port read from the ready line. copy.ts, tls.ts and pgwire.ts use it.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly dataDir: string;
  /** SIGTERM, wait for the exit, remove the data directory. */
  stop(): Promise<void>;
}

/** Starts `entry` with `args` after the port and data directory; the data directory is `oxbow-bench-<name>-*`. */
export async function startServerProcess(entry: string, name: string, args: readonly string[] = []): Promise<ServerProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), `oxbow-bench-${name}-`));
  const child = spawn(process.execPath, [entry, '--port', '0', '--data-dir', dataDir, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolvePort, reject) => {
    let output = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      output += chunk;
      const ready = /oxbow ready: postgres:\/\/[^@]+@[^:]+:(\d+)/.exec(output);
      if (ready !== null) resolvePort(Number(ready[1]));
    });
    child.once('exit', (code) => reject(new Error(`oxbow exited (${code}) before it was ready: ${output}`)));
  });
  return {
    child,
    port,
    dataDir,
    async stop() {
      const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
      child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
