// The README's first session, as a reader would run it: the first ```sql block of README.md is
// pasted through the real psql into a server started as the README says (the built `oxbow`
// command), with a real Kafka broker (`npm run kafka`'s script) standing in for 127.0.0.1:9092.
// Every statement must succeed (ON_ERROR_STOP), and every view must hold the rows computed here
// from the rows the session inserts, independently of oxbow.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../kafka/broker.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const README_BROKER = '127.0.0.1:9092';

/** The session's orders: (id, customer, amount) as inserted, then after `UPDATE ... SET amount = 20 WHERE id = 2`. */
const INSERTED: readonly (readonly [number, string, number])[] = [
  [1, 'ada', 12.5],
  [2, 'grace', 7.25],
  [3, 'ada', 3],
];
const UPDATED = INSERTED.map(([id, customer, amount]) => [id, customer, id === 2 ? 20 : amount] as const);

/** customer -> [count, sum] over the orders, sorted by customer. */
function spendOf(orders: readonly (readonly [number, string, number])[]): [string, number, number][] {
  const groups = new Map<string, [number, number]>();
  for (const [, customer, amount] of orders) {
    const group = groups.get(customer) ?? [0, 0];
    groups.set(customer, [group[0] + 1, group[1] + amount]);
  }
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([customer, [count, sum]]) => [customer, count, sum]);
}

/** As psql prints a numeric(10,2) sum: two decimals. */
function printed(rows: [string, number, number][]): string[][] {
  return rows.map(([customer, count, sum]) => [customer, String(count), sum.toFixed(2)]);
}

/** The datagen source's numbers 1..1000 grouped by n % 2: [odd, count, sum]. */
function parityOf(first: number, last: number): string[][] {
  const groups = [
    [0, 0],
    [0, 0],
  ];
  for (let n = first; n <= last; n++) {
    groups[n % 2]![0]! += 1;
    groups[n % 2]![1]! += n;
  }
  return groups.map(([count, sum], odd) => [String(odd), String(count), String(sum)]);
}

/** The first ```sql block of the README. */
function firstSession(): string {
  const found = /^```sql\n([\s\S]*?)^```$/m.exec(readFileSync(README, 'utf8'));
  if (found === null) throw new Error('README.md has no ```sql block');
  return found[1]!;
}

/** psql's aligned result sets that end with "(N rows)": the header's columns and the rows' cells. */
function resultSets(output: string): { columns: string[]; rows: string[][] }[] {
  const lines = output.split('\n');
  const sets: { columns: string[]; rows: string[][] }[] = [];
  for (let i = 1; i < lines.length; i++) {
    if (!/^-+(\+-+)*$/.test(lines[i]!)) continue;
    const columns = lines[i - 1]!.split('|').map((cell) => cell.trim());
    const rows: string[][] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j] !== '' && !/^\(\d+ rows?\)$/.test(lines[j]!); j++) rows.push(lines[j]!.split('|').map((cell) => cell.trim()));
    if (j < lines.length && /^\(\d+ rows?\)$/.test(lines[j]!)) {
      expect(lines[j]).toBe(`(${rows.length} ${rows.length === 1 ? 'row' : 'rows'})`);
      sets.push({ columns, rows });
    }
    i = j;
  }
  return sets;
}

let broker: Broker | undefined;
let oxbow: OxbowServer | undefined;
let client: pg.Client | undefined;
const folder = mkdtempSync(join(tmpdir(), 'oxbow-readme-'));

beforeAll(async () => {
  broker = await startBroker();
  oxbow = await startOxbow();
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
}, 180_000);

afterAll(async () => {
  await client?.end();
  await oxbow?.stop();
  await broker?.stop();
  rmSync(folder, { recursive: true, force: true });
});

async function eventually(sql: string, expected: unknown[][]): Promise<void> {
  const deadline = Date.now() + 60_000;
  let rows: unknown[][] = [];
  while (Date.now() < deadline) {
    rows = (await client!.query({ text: sql, rowMode: 'array' })).rows as unknown[][];
    if (JSON.stringify(rows) === JSON.stringify(expected)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(rows).toEqual(expected);
}

describe("README's first session", () => {
  it('runs through psql, every statement succeeding, every view holding its computed rows', async () => {
    const session = firstSession();
    expect(session).toContain(`properties.bootstrap.server = '${README_BROKER}'`);
    const script = join(folder, 'first-session.sql');
    writeFileSync(script, session.replaceAll(README_BROKER, broker!.bootstrap));
    const psql = spawnSync('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-h', oxbow!.host, '-p', String(oxbow!.port), '-U', 'oxbow', '-d', 'oxbow', '-f', script], {
      encoding: 'utf8',
      env: { ...process.env, PGTZ: 'UTC' },
      timeout: 120_000,
    });
    const output = `${psql.stdout}${psql.stderr}`;
    expect(psql.status, output).toBe(0);
    expect(psql.stderr, output).toBe('');

    // Every statement's command tag, in the session's order.
    const tags = psql.stdout.split('\n').filter((line) => /^(CREATE|INSERT|UPDATE|SELECT \d)/.test(line));
    // (A view over a source counts the rows it found at creation: how many depends on timing.)
    const expectedTags = [/^CREATE TABLE$/, /^INSERT 0 3$/, /^SELECT 2$/, /^UPDATE 1$/, /^CREATE SOURCE$/, /^SELECT \d+$/, /^CREATE SINK$/, /^CREATE SOURCE$/, /^SELECT \d+$/];
    expect(tags, output).toHaveLength(expectedTags.length);
    tags.forEach((tag, i) => expect(tag).toMatch(expectedTags[i]!));

    const sets = resultSets(psql.stdout);
    const spendColumns = ['customer', 'orders', 'total'];
    // The view after the INSERT, after the UPDATE, and AS OF a second before the UPDATE.
    expect(sets[0]).toEqual({ columns: spendColumns, rows: printed(spendOf(INSERTED)) });
    expect(sets[1]).toEqual({ columns: spendColumns, rows: printed(spendOf(UPDATED)) });
    expect(sets[2]).toEqual({ columns: spendColumns, rows: printed(spendOf(INSERTED)) });
    // Row 2's two versions: the first valid until the second was written, the second still valid.
    const history = sets[3]!;
    expect(history.columns).toEqual(['id', 'amount', 'oxbow_valid_from', 'oxbow_valid_to']);
    expect(history.rows.map(([id, amount]) => [id, amount])).toEqual([
      ['2', '7.25'],
      ['2', '20.00'],
    ]);
    expect(history.rows[0]![3]).toBe(history.rows[1]![2]);
    expect(history.rows[1]![3]).toBe('');
    // \dm lists the three views.
    expect(sets.at(-1)!.rows.map((row) => row[1])).toEqual(['parity', 'spend', 'spend_from_kafka']);

    // The generator's and Kafka's views, once their sources are read to the end.
    await eventually('SELECT odd::text, numbers::text, total::text FROM parity ORDER BY odd', parityOf(1, 1000));
    const kafka = spendOf(UPDATED).map(([customer, count, sum]) => [customer, String(count), String(sum)]);
    await eventually('SELECT customer, orders::text, total::float8::text FROM spend_from_kafka ORDER BY customer', kafka);
  }, 240_000);
});
