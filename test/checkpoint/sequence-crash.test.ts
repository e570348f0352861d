// Sequences across a crash: a server process hands out values (nextval in SELECTs, in an INSERT
// ... SELECT over many rows, through a serial column's default, while more calls are in flight),
// is killed with SIGKILL, and restarts on the same data directory. Every value handed out after
// the restart is greater than every value any client saw before it: the reserved range is durable
// before a value in it is handed out, and a restart skips past it.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectToKillable, startOxbow, type OxbowServer } from '../support/server.js';

const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-sequence-crash-'));
let server: OxbowServer | undefined;

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('sequences survive SIGKILL', () => {
  it('never hand out a value twice across three kills and restarts', { timeout: 180_000 }, async () => {
    server = await startOxbow({ dataDir });
    let client = await connectToKillable(server);
    await client.query('CREATE SEQUENCE s');
    await client.query('CREATE TABLE t (id bigserial PRIMARY KEY, round int)');
    let seenSequence = 0n;
    let seenSerial = 0n;
    for (let round = 1; round <= 3; round++) {
      // Serial ids first; then values from SELECTs alone, which commit no epoch before the kill.
      const inserted = await client.query('INSERT INTO t (round) SELECT $1 FROM generate_series(1, 100) RETURNING id', [round]);
      for (const row of inserted.rows) {
        const id = BigInt(row.id);
        expect(id).toBeGreaterThan(seenSerial);
        seenSerial = id;
      }
      // Values the clients see: single calls, a batch of 5,000 rows.
      for (let i = 0; i < 10; i++) {
        const { rows } = await client.query("SELECT nextval('s') AS v");
        const value = BigInt(rows[0].v);
        expect(value).toBeGreaterThan(seenSequence);
        seenSequence = value;
      }
      const batch = await client.query("SELECT nextval('s') AS v FROM generate_series(1, 5000)");
      for (const row of batch.rows) {
        const value = BigInt(row.v);
        expect(value).toBeGreaterThan(seenSequence);
        seenSequence = value;
      }
      // More calls in flight when the kill lands: whatever answered counts as seen.
      const inFlight = Array.from({ length: 50 }, () =>
        client.query("SELECT nextval('s') AS v").then(
          (result) => {
            const value = BigInt(result.rows[0].v);
            if (value > seenSequence) seenSequence = value;
          },
          () => undefined,
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 2));
      await server.kill('SIGKILL');
      await Promise.all(inFlight);
      await client.end().catch(() => undefined);

      server = await startOxbow({ dataDir });
      client = await connectToKillable(server);
      const after = await client.query("SELECT nextval('s') AS v FROM generate_series(1, 20)");
      for (const row of after.rows) expect(BigInt(row.v)).toBeGreaterThan(seenSequence);
      seenSequence = BigInt(after.rows[after.rows.length - 1].v);
      const afterInsert = await client.query('INSERT INTO t (round) VALUES (0) RETURNING id');
      expect(BigInt(afterInsert.rows[0].id)).toBeGreaterThan(seenSerial);
      seenSerial = BigInt(afterInsert.rows[0].id);
    }
    const { rows } = await client.query('SELECT count(*) AS n, count(DISTINCT id) AS d FROM t');
    expect(rows[0].n).toBe(rows[0].d);
    await client.end();
  });
});
