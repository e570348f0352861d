// Starts a real etcd (Debian's etcd-server, installed by .ci/run) for the cluster tests: one
// member on free loopback ports, its data in a fresh temporary directory, removed by stop().
//
//   const etcd = await startEtcd();
//   ... --cluster etcd.url ...
//   await etcd.stop();

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { listensOn } from './listens-on.js';

const READY_TIMEOUT_MS = 30_000;

export interface EtcdServer {
  /** `etcd://127.0.0.1:PORT`, the value of --cluster. */
  readonly url: string;
  /** `http://127.0.0.1:PORT`, for an etcd client. */
  readonly endpoint: string;
  stderr(): string;
  stop(): Promise<void>;
}

export async function startEtcd(): Promise<EtcdServer> {
  const dir = mkdtempSync(join(tmpdir(), 'oxbow-etcd-'));
  const clientPort = await freePort();
  const peerPort = await freePort();
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child = spawn(
    'etcd',
    [
      '--name', 'oxbow-test',
      '--data-dir', join(dir, 'data'),
      '--listen-client-urls', endpoint,
      '--advertise-client-urls', endpoint,
      '--listen-peer-urls', peer,
      '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `oxbow-test=${peer}`,
      '--log-level', 'warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (text: string) => {
    stderr = (stderr + text).slice(-20_000);
  });
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const spawnFailed = new Promise<never>((_, reject) => child.once('error', (error) => reject(new Error(`cannot start etcd (is etcd-server installed? .ci/run installs it): ${error.message}`))));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const ready = (async () => {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`etcd exited with code ${child.exitCode}:\n${stderr}`);
      try {
        const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
        // Healthy, and this etcd's: not another file's process on a port taken in between.
        if (response.ok && ((await response.json()) as { health?: string }).health === 'true' && listensOn(child.pid!, clientPort)) return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error(`etcd was not healthy within ${READY_TIMEOUT_MS} ms:\n${stderr}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
  })();
  try {
    await Promise.race([ready, spawnFailed]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `etcd://127.0.0.1:${clientPort}`, endpoint, stderr: () => stderr, stop };
}
