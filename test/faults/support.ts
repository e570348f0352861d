// What the fault-injection suites share: polling until a condition holds, signalling a process
// with all its descendants (PostgreSQL's backends are the postmaster's children: SIGSTOP of the
// postmaster alone would leave them answering), the JSON lines the suite reports its figures in,
// and the checks every fault ends with (the process alive, a view equal to its query).

import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import { expect } from 'vitest';
import type { OxbowServer } from '../support/server.js';

/** Polls `check` every 100 ms until it returns a value (not undefined); fails naming `what` after `timeoutMs`. */
export async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
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
