// A sink AS a temporal join (`LEFT JOIN side FOR SYSTEM_TIME AS OF PROCTIME()`), end to end: an
// oxbow server process delivers it into a real PostgreSQL 15 table (upsert by the bid's id). The
// test keeps its own model: the side table's content after every statement, and for each bid the
// side value its current version saw when it was written. After every round of random changes to
// the bids and to the side table the PostgreSQL table must equal the model: later side changes do
// not touch delivered rows, a bid without a side row is delivered with NULL, an updated bid carries
// the side value of its update, a deleted one is deleted. Then oxbow restarts on the same data
// directory and the rounds go on.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { seededRandom } from '../support/seeded-random.js';

let oxbow: OxbowServer | undefined;
let postgres: PostgresServer;
let sql: pg.Client | undefined;
let target: pg.Client;
const dataDir = mkdtempSync(join(tmpdir(), 'oxbow-temporal-sink-'));

async function startOurs(): Promise<void> {
  oxbow = await startOxbow({ dataDir, args: ['--barrier-interval-ms', '100'] });
  sql = new pg.Client({ connectionString: oxbow.url });
  await sql.connect();
}

async function stopOurs(): Promise<void> {
  await sql?.end();
  sql = undefined;
  await oxbow?.stop();
  oxbow = undefined;
}

beforeAll(async () => {
  [, postgres] = await Promise.all([startOurs(), startPostgres({ settings: { max_connections: '30' } })]);
  target = await postgres.connect();
  target.on('error', () => undefined);
}, 120_000);

afterAll(async () => {
  await target?.end();
  await stopOurs();
  await postgres?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Bid {
  auction: number;
  price: number;
  value: string | null;
}

describe('a sink AS a temporal join', () => {
  it('delivers each bid with the side row as of its moment, across a restart', { timeout: 180_000 }, async () => {
    await sql!.query('CREATE TABLE side (key int PRIMARY KEY, value varchar)');
    await sql!.query('CREATE TABLE bids (id int PRIMARY KEY, auction int, price int)');
    await target.query('CREATE TABLE enriched (id int PRIMARY KEY, auction int, price int, value varchar)');
    const side = new Map<number, string>();
    const bids = new Map<number, Bid>();
    const random = seededRandom(13);
    let nextId = 1;
    let version = 0;
    const step = (): string => {
      const r = random();
      if (r < 0.35) {
        const key = Math.floor(random() * 12);
        const value = `v${++version}`;
        side.set(key, value);
        return `INSERT INTO side VALUES (${key}, '${value}') ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
      }
      if (r < 0.42 && side.size > 0) {
        const key = [...side.keys()][Math.floor(random() * side.size)]!;
        side.delete(key);
        return `DELETE FROM side WHERE key = ${key}`;
      }
      if (r < 0.75 || bids.size === 0) {
        const values: string[] = [];
        for (let i = 0, n = 1 + Math.floor(random() * 5); i < n; i++) {
          const id = nextId++;
          const auction = Math.floor(random() * 40);
          const price = Math.floor(random() * 100);
          bids.set(id, { auction, price, value: side.get(auction % 10) ?? null });
          values.push(`(${id}, ${auction}, ${price})`);
        }
        return `INSERT INTO bids VALUES ${values.join(', ')}`;
      }
      if (r < 0.9) {
        const modulus = 2 + Math.floor(random() * 3);
        for (const [id, bid] of bids) {
          if (id % modulus !== 0) continue;
          bid.auction += 1;
          bid.price += 1;
          bid.value = side.get(bid.auction % 10) ?? null;
        }
        return `UPDATE bids SET auction = auction + 1, price = price + 1 WHERE id % ${modulus} = 0`;
      }
      const id = [...bids.keys()][Math.floor(random() * bids.size)]!;
      bids.delete(id);
      return `DELETE FROM bids WHERE id = ${id}`;
    };
    const expected = () => [...bids].map(([id, bid]) => `${id}|${bid.auction}|${bid.price}|${bid.value ?? 'NULL'}`).sort();
    const delivered = async () => (await target.query('SELECT id, auction, price, value FROM enriched')).rows.map((row) => `${row.id}|${row.auction}|${row.price}|${row.value ?? 'NULL'}`).sort();
    const settle = async (round: string) => {
      const want = expected();
      await until(`the sink after ${round}`, async () => JSON.stringify(await delivered()) === JSON.stringify(want)).catch(async (error: unknown) => {
        expect(await delivered(), `the sink after ${round}`).toEqual(want);
        throw error;
      });
    };

    for (let i = 0; i < 12; i++) await sql!.query(step());
    // The sink's first delivery: every bid with the side row as of the sink's creation.
    await sql!.query(
      `CREATE SINK enriched_pg AS SELECT b.id, b.auction, b.price, s.value FROM bids b LEFT JOIN side FOR SYSTEM_TIME AS OF PROCTIME() s ON b.auction % 10 = s.key WITH (connector = 'jdbc', jdbc.url = 'jdbc:postgresql://127.0.0.1:${postgres.port}/postgres?user=postgres', table.name = 'enriched', type = 'upsert', primary_key = 'id')`,
    );
    for (const bid of bids.values()) bid.value = side.get(bid.auction % 10) ?? null;
    await settle('the creation');
    for (let round = 0; round < 8; round++) {
      const statements: string[] = [];
      for (let i = 0; i < 6; i++) {
        const statement = step();
        statements.push(statement);
        await sql!.query(statement);
      }
      await settle(`round ${round}: ${statements.join('; ')}`);
      if (round === 3) {
        await stopOurs();
        await startOurs();
      }
    }
  });
});
