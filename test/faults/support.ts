// What the fault-injection suites share: the set-up of a dependency behind the fault proxy with
// an oxbow server and a client (`useFaultRig`), the oxbow servers a file starts and kills itself
// (`ServerSet`), a writer that inserts until stopped (`startWriter`), polling until a condition
// holds, signalling a process with all its descendants (PostgreSQL's backends are the postmaster's
// children: SIGSTOP of the postmaster alone would leave them answering), the JSON lines the suite
// reports its figures in, and the checks every fault ends with (the process alive, a view equal
// to its query).

import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import type { FaultProxy } from '../support/fault-proxy.js';
import { connectToKillable, startOxbow, type OxbowServer, type StartOxbowOptions } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

/** A dependency behind the fault proxy: `pid` its process (SIGSTOP in a test, SIGCONT at the end). */
export interface FaultTarget {
  readonly proxy: FaultProxy;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface FaultRig<T extends FaultTarget> {
  readonly target: T;
  readonly oxbow: OxbowServer;
  /** Connected to `oxbow`. */
  readonly client: pg.Client;
}

/**
 * Registers the file's beforeAll / afterAll: `start()` brings up the dependency and its proxy, then
 * an oxbow server with `oxbowArgs` and a connected client. At the end the dependency is continued
 * (a test that failed mid-SIGSTOP), the proxy passes again, and everything stops. The parts are
 * read from the returned object once beforeAll has run.
 */
export function useFaultRig<T extends FaultTarget>(start: () => Promise<T>, oxbowArgs: readonly string[]): FaultRig<T> {
  const parts: { target?: T; oxbow?: OxbowServer; client?: pg.Client } = {};
  beforeAll(async () => {
    parts.target = await start();
    parts.oxbow = await startOxbow({ args: ['--barrier-interval-ms', '100', ...oxbowArgs] });
    parts.client = new pg.Client({ connectionString: parts.oxbow.url });
    await parts.client.connect();
  }, 180_000);
  afterAll(async () => {
    const { target, oxbow, client } = parts;
    if (target !== undefined) signalTree(target.pid, 'SIGCONT');
    target?.proxy.pass();
    await client?.end().catch(() => undefined);
    await oxbow?.stop();
    await target?.proxy.close();
    await target?.stop();
  });
  const started = <K extends keyof typeof parts>(name: K): NonNullable<(typeof parts)[K]> => {
    const part = parts[name];
    if (part === undefined) throw new Error(`the fault rig's ${name} is not started (read it inside a test)`);
    return part as NonNullable<(typeof parts)[K]>;
  };
  return {
    get target() {
      return started('target');
    },
    get oxbow() {
      return started('oxbow');
    },
    get client() {
      return started('client');
    },
  };
}

/** The oxbow servers a file starts itself (on its own data directories); `killAll()` in its afterAll. */
export class ServerSet {
  private readonly servers: OxbowServer[] = [];

  /** Starts a server and connects a client (a server's death is no client error event). */
  async start(options: StartOxbowOptions): Promise<{ server: OxbowServer; client: pg.Client }> {
    const server = await startOxbow(options);
    this.servers.push(server);
    return { server, client: await connectToKillable(server) };
  }

  async killAll(): Promise<void> {
    for (const server of this.servers) await server.kill('SIGKILL').catch(() => undefined);
  }
}

/**
 * Calls `write(n)` for n = from, from + 1, ... every 20 ms until stopped; `acked` holds each n whose
 * write returned. A failed write ends the writer and `stop()` rethrows it (no unhandled rejection
 * meanwhile).
 */
export function startWriter(write: (n: number) => Promise<unknown>, from = 1): { acked: number[]; stop(): Promise<void> } {
  const acked: number[] = [];
  let running = true;
  const loop = (async () => {
    for (let n = from; running; n++) {
      await write(n);
      acked.push(n);
      await sleep(20);
    }
  })().catch((error: unknown) => error);
  return {
    acked,
    async stop() {
      running = false;
      const failure = await loop;
      if (failure !== undefined) throw failure;
    },
  };
}

/** Polls `check` every 100 ms until it returns a value (not undefined); fails naming `what` after `timeoutMs`. */
export function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  return waitFor(what, check, timeoutMs);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The process ids of `pid` and every descendant, from /proc. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(parent) ?? [];
    list.push(Number(entry));
    children.set(parent, list);
  }
  const out: number[] = [];
  const walk = (id: number): void => {
    out.push(id);
    for (const child of children.get(id) ?? []) walk(child);
  };
  walk(pid);
  return out;
}

/** Sends `signal` to `pid` and all its descendants (SIGSTOP: a hung dependency; SIGCONT: back). */
export function signalTree(pid: number, signal: NodeJS.Signals): void {
  for (const id of processTree(pid)) {
    try {
      process.kill(id, signal);
    } catch {
      // gone meanwhile
    }
  }
}

/** One figure of the suite, as a JSON line on stdout (BENCHMARKS.md collects them). */
export function report(metric: string, value: number, unit: string): void {
  console.log(JSON.stringify({ bench: 'faults', metric, value, unit }));
}

/** The server is still running (a fault must not crash it). */
export function expectAlive(server: OxbowServer): void {
  expect(server.process.exitCode, server.stderr()).toBeNull();
  expect(server.process.signalCode, server.stderr()).toBeNull();
}

/**
 * `sql` (a CREATE against the hung dependency) fails within 10 s with a SQLSTATE that is `code` (or
 * matches it) and a message matching `message`: a connect deadline, not a hang.
 */
export async function expectRefusedQuickly(client: pg.Client, sql: string, code: string | RegExp, message: RegExp): Promise<void> {
  const started = Date.now();
  const refused = await client.query(sql).then(
    () => undefined,
    (error: { code: string; message: string }) => error,
  );
  expect(refused, `${sql} succeeded against a hung dependency`).toBeDefined();
  if (typeof code === 'string') expect(refused!.code, refused!.message).toBe(code);
  else expect(refused!.code, refused!.message).toMatch(code);
  expect(refused!.message).toMatch(message);
  expect(Date.now() - started).toBeLessThan(10_000);
}

/** Rows of `sql` as sorted text lines. */
export async function lines(client: pg.Client, sql: string): Promise<string[]> {
  const result = await client.query({ text: sql, rowMode: 'array' });
  return (result.rows as unknown[][]).map((row) => row.map((value) => (value === null ? 'NULL' : String(value))).join('|')).sort();
}

/** A materialized view equals its definition run as a batch query (the view read first, then the query, at rest). */
export async function expectViewEqualsQuery(client: pg.Client, view: string, query: string): Promise<void> {
  await eventually(`${view} equal to its query`, 20_000, async () => {
    const [seen, expected] = [await lines(client, `select * from ${view}`), await lines(client, query)];
    return JSON.stringify(seen) === JSON.stringify(expected) ? true : undefined;
  });
}
