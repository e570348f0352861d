// A source's progress as the tests wait on it: the sum of the offsets its partitions committed with
// the last epoch (`oxbow_catalog.source_partitions`): messages for Kafka, event numbers for the
// generators. Tests wait on this state, never on time.

import type pg from 'pg';
import { waitFor } from './wait-for.js';

/** The sum of the committed offsets of `sources`. */
export async function committedOffsets(client: pg.Client, sources: string | readonly string[]): Promise<number> {
  const names = (typeof sources === 'string' ? [sources] : sources).map((name) => `'${name.replaceAll("'", "''")}'`).join(', ');
  const result = await client.query(`SELECT coalesce(sum(committed_offset), 0)::int8 AS n FROM oxbow_catalog.source_partitions WHERE source_name IN (${names})`);
  return Number(result.rows[0].n);
}

/** Waits until the committed offsets of `sources` add up to at least `atLeast`. */
export async function waitForCommittedOffsets(client: pg.Client, sources: string | readonly string[], atLeast: number, timeoutMs = 120_000): Promise<number> {
  return waitFor(`${String(sources)} to commit ${atLeast}`, async () => {
    const committed = await committedOffsets(client, sources);
    return committed >= atLeast ? committed : undefined;
  }, timeoutMs);
}
