// Starts s3rver in a child process on a free loopback port (see s3rver-child.mjs), with bucket
// `oxbow`. `stop()` kills it (SIGKILL: an S3 outage mid-upload), `start()` brings it back on the
// same port with the same data; `pause()` (SIGSTOP) makes it hang, `resume()` (SIGCONT) brings it
// back. `env` is what an oxbow process needs to reach it.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 's3rver-child.mjs');

export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export class S3rverProcess {
  readonly directory = mkdtempSync(join(tmpdir(), 'oxbow-s3rver-'));
  port = 0;
  private child: ChildProcess | undefined;

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get env(): Record<string, string> {
    return {
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL: this.endpoint,
    };
  }

  async start(): Promise<void> {
    const child = spawn(process.execPath, [CHILD, this.directory, String(this.port)], {
      env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    this.port = await new Promise<number>((resolve, reject) => {
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n')[0];
        if (stdout.includes('\n')) resolve((JSON.parse(line!) as { port: number }).port);
      });
      child.once('exit', (code) => reject(new Error(`s3rver exited with ${code}: ${stderr}`)));
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /**
   * SIGSTOP: the server keeps its port, the kernel still accepts connections, nothing answers (a
   * hung object store). `resume()` (SIGCONT) lets it answer again.
   */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.directory, { recursive: true, force: true });
  }
}

export async function startS3rver(): Promise<S3rverProcess> {
  const server = new S3rverProcess();
  await server.start();
  return server;
}
