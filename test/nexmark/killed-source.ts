// A generator source killed mid-stream: what the exactly-once tests of `sources.test.ts` and
// `replay.test.ts` share. A server on a kept data directory, the source `bid` created by the test,
// SIGKILL each time its committed events pass a threshold (each below the events it has), a start
// on the same directory, until every event is committed.

import type pg from 'pg';
import { expect } from 'vitest';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';
import { committedOffsets, waitForCommittedOffsets } from '../support/source-offsets.js';

/**
 * Starts a server on `dataDir` and runs `setUp` (which creates the source `bid` of `events` events
 * and what reads it); SIGKILLs and restarts the server once `bid` committed each of `thresholds`;
 * returns the last server and its client once all `events` are committed.
 */
export async function killMidStream(dataDir: string, events: number, thresholds: readonly number[], setUp: (sql: pg.Client) => Promise<void>): Promise<{ server: OxbowServer; sql: pg.Client }> {
  const start = () => startOxbow({ dataDir, args: ['--barrier-interval-ms', '100'] });
  let server = await start();
  let sql = await connectToKillable(server);
  await setUp(sql);
  for (const threshold of thresholds) {
    await waitForCommittedOffsets(sql, 'bid', threshold);
    expect(await committedOffsets(sql, 'bid')).toBeLessThan(events);
    await server.kill('SIGKILL');
    await sql.end().catch(() => undefined);
    server = await start();
    sql = await connectToKillable(server);
  }
  await waitForCommittedOffsets(sql, 'bid', events);
  return { server, sql };
}
