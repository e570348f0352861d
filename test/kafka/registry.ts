// A real Confluent-compatible schema registry for the tests: Karapace, installed by `.ci/run`
// into `.cache/karapace` (from ../shared/registry/install.sh beside the checkout), started on a
// free port against the test's broker, with a fresh group id. Outside CI a missing install skips
// the file with one line saying so; with CI=true it fails, naming the step that installs it.
// Also the registry REST calls the tests make (register a schema, its id).

import { spawn, type ChildProcess } from 'node:child_process';
import { pbkdf2Sync } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { waitFor } from '../support/wait-for.js';
import { freePort } from '../support/free-port.js';
import { listensOn } from '../support/listens-on.js';

/** The repository's root (this file is test/kafka/registry.ts, or dist/test/kafka/registry.js for bench/avro.ts). */
const UP = resolve(import.meta.dirname, '..', '..');
const ROOT = UP.endsWith('/dist') ? resolve(UP, '..') : UP;
/** Where `.ci/run` installs Karapace. */
export const KARAPACE_DIR = resolve(ROOT, '.cache', 'karapace');
const PYTHON = join(KARAPACE_DIR, 'venv', 'bin', 'python');
const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

/** True when Karapace is installed; false (with one line) outside CI; throws under CI=true. */
export function registryInstalled(): boolean {
  if (existsSync(PYTHON)) return true;
  const message = `the schema registry (Karapace) is not installed in ${KARAPACE_DIR}: .ci/run installs it with ../shared/registry/install.sh .cache/karapace`;
  if (process.env['CI'] === 'true') throw new Error(message);
  console.warn(`skipped: ${message}`);
  return false;
}

export interface Registry {
  readonly url: string;
  /** Registers `schema` (an object for Avro, text for Protobuf) under `subject`; returns its id. */
  register(subject: string, schema: unknown, schemaType?: 'AVRO' | 'PROTOBUF'): Promise<number>;
  stop(): Promise<void>;
  /** Stops the process, keeping the port (start() brings it back on the same port). */
  pause(): Promise<void>;
  start(): Promise<void>;
}

export interface RegistryAuth {
  readonly username: string;
  readonly password: string;
}

/** A Karapace auth file granting `auth` everything (pbkdf2-sha512 as Karapace's `karapace_mkpasswd` writes it). */
function authFile(auth: RegistryAuth, dir: string): string {
  const salt = 'oxbow-test-salt';
  const hash = pbkdf2Sync(auth.password, salt, 5000, 64, 'sha512').toString('base64');
  const file = join(dir, 'auth.json');
  writeFileSync(file, JSON.stringify({ users: [{ username: auth.username, algorithm: 'sha512', salt, password_hash: hash }], permissions: [{ username: auth.username, operation: 'Write', resource: '.*' }] }));
  return file;
}

/** Starts Karapace on a free port against `bootstrap`; with `auth`, HTTP basic auth is required. */
export async function startRegistry(bootstrap: string, auth?: RegistryAuth): Promise<Registry> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const headers: Record<string, string> = auth === undefined ? {} : { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` };
  let generation = 0;
  /** One start: the process, then its answers until it says it is master, within `timeoutMs`. */
  const startOnce = async (timeoutMs: number): Promise<void> => {
    generation++;
    const runDir = join(KARAPACE_DIR, 'run', String(port));
    mkdirSync(runDir, { recursive: true });
    const env = {
      ...process.env,
      KARAPACE_HOST: '127.0.0.1',
      KARAPACE_PORT: String(port),
      KARAPACE_BOOTSTRAP_URI: bootstrap,
      KARAPACE_ADVERTISED_HOSTNAME: '127.0.0.1',
      KARAPACE_REGISTRY_HOST: '127.0.0.1',
      KARAPACE_REGISTRY_PORT: String(port),
      KARAPACE_LOG_LEVEL: 'WARNING',
      // Its own schemas topic: two registries on one topic would both act as master.
      KARAPACE_TOPIC_NAME: auth === undefined ? '_schemas' : '_schemas_auth',
      KARAPACE_COMPATIBILITY: 'BACKWARD',
      KARAPACE_KARAPACE_REGISTRY: 'true',
      // A fresh group id per start: a restart does not wait for the old member's session to expire.
      KARAPACE_GROUP_ID: `karapace-${port}-${generation}-${process.pid}`,
      KARAPACE_WAITING_TIME_BEFORE_ACTING_AS_MASTER_MS: '0',
      ...(auth === undefined ? {} : { KARAPACE_REGISTRY_AUTHFILE: authFile(auth, runDir) }),
    };
    const started = spawn(PYTHON, ['-m', 'karapace'], { cwd: runDir, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    started.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child = started;
    /** What the last poll saw, for the error when it never gets ready. */
    let seen = 'no answer yet';
    try {
      await waitFor(
        `the schema registry on ${url}`,
        async () => {
          if (started.exitCode !== null) throw new Error(`the schema registry exited (${started.exitCode}): ${stderr}`);
          try {
            const response = await fetch(`${url}/master_available`, { headers });
            const body = (await response.json()) as { master_available?: boolean };
            // This registry's answer: not another file's on a port taken in between.
            const own = listensOn(started.pid!, port);
            seen = `master_available ${String(body.master_available)}${own ? '' : ', the port held by another process'}`;
            return body.master_available === true && own ? true : undefined;
          } catch (error) {
            seen = `no answer: ${error instanceof Error ? error.message : String(error)}`;
            return undefined;
          }
        },
        timeoutMs,
      );
    } catch (error) {
      throw new Error(`${error instanceof Error ? error.message : String(error)} (last seen: ${seen}; its stderr: ${stderr.trim() || 'none'})`);
    }
  };
  /**
   * Starts the registry; one that does not get ready in 75 s (seen twice in the full suite on a
   * loaded 2-core machine, its group's master never elected) is stopped and started once more with
   * a fresh group id. Karapace is a part the tests use, not what they test.
   */
  const run = async (): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        await startOnce(75_000);
        return;
      } catch (error) {
        await kill();
        if (attempt >= 2) throw error;
        console.warn(`the schema registry on ${url} is started again: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  };
  const kill = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    await new Promise<void>((done) => {
      running.once('exit', () => done());
      running.kill('SIGTERM');
      setTimeout(() => running.kill('SIGKILL'), 5000).unref();
    });
  };
  await run();
  return {
    url,
    async register(subject, schema, schemaType = 'AVRO') {
      const body = { schema: typeof schema === 'string' ? schema : JSON.stringify(schema), ...(schemaType === 'AVRO' ? {} : { schemaType }) };
      for (let attempt = 1; ; attempt++) {
        const response = await fetch(`${url}/subjects/${encodeURIComponent(subject)}/versions`, { method: 'POST', headers: { ...headers, 'content-type': CONTENT_TYPE }, body: JSON.stringify(body) });
        const answer = (await response.json()) as { id?: number; message?: string };
        if (response.ok && answer.id !== undefined) return answer.id;
        // "No master set" until the election settles.
        if (response.status >= 500 && attempt < 30) {
          await new Promise((done) => setTimeout(done, 500));
          continue;
        }
        throw new Error(`registering under ${subject} answered ${response.status}: ${answer.message ?? JSON.stringify(answer)}`);
      }
    },
    stop: kill,
    pause: kill,
    start: run,
  };
}
