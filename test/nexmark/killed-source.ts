// A generator source killed mid-stream: what the exactly-once tests of `sources.test.ts`,
// `replay.test.ts` and the parallel source crash tests (rescaled at each start) share. A server on a kept data directory, the source `bid` created by the test,
// SIGKILL each time its committed events pass a threshold (each below the events it has), a start
// on the same directory, until every event is committed.

import type pg from 'pg';
import { expect } from 'vitest';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';
import { committedOffsets, waitForCommittedOffsets } from '../support/source-offsets.js';

/** The rows of `query` as text as the server sent it (NULL as 'NULL'). */
export async function textRows(sql: pg.Client, query: string): Promise<string[][]> {
  const result = await sql.query({ text: query, rowMode: 'array', types: { getTypeParser: () => (value: string) => value } });
  return (result.rows as string[][]).map((row) => row.map((value) => (value === null ? 'NULL' : value)));
}

/** What a kill-and-restart run may change: the server's arguments and environment, the sources it waits on. */
export interface KillOptions {
  /** The server's arguments at its first start (0) and after the i-th kill (i); a 100 ms barrier interval when absent. */
  readonly args?: (start: number) => string[];
  readonly env?: Record<string, string>;
  /** The sources that must each commit a threshold before the kill (`bid` when absent); `bid` is the one checked below `events`. */
  readonly sources?: readonly string[];
}

/**
 * Starts a server on `dataDir` and runs `setUp` (which creates the source `bid` of `events` events
 * and what reads it); SIGKILLs and restarts the server once `bid` committed each of `thresholds`;
 * returns the last server and its client once all `events` are committed.
 */
export async function killMidStream(dataDir: string, events: number, thresholds: readonly number[], setUp: (sql: pg.Client) => Promise<void>, options: KillOptions = {}): Promise<{ server: OxbowServer; sql: pg.Client }> {
  const sources = options.sources ?? ['bid'];
  const waitForEach = async (client: pg.Client, atLeast: number) => {
    for (const source of sources) await waitForCommittedOffsets(client, source, atLeast);
  };
  const start = (index: number) => startOxbow({ dataDir, args: options.args?.(index) ?? ['--barrier-interval-ms', '100'], ...(options.env === undefined ? {} : { env: options.env }) });
  let server = await start(0);
  let sql = await connectToKillable(server);
  await setUp(sql);
  for (const [index, threshold] of thresholds.entries()) {
    await waitForEach(sql, threshold);
    expect(await committedOffsets(sql, 'bid')).toBeLessThan(events);
    await server.kill('SIGKILL');
    await sql.end().catch(() => undefined);
    server = await start(index + 1);
    sql = await connectToKillable(server);
  }
  await waitForEach(sql, events);
  return { server, sql };
}
