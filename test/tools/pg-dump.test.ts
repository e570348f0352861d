// pg_dump 15 (Debian's postgresql-client, installed by .ci/run) against oxbow: a database with
// tables (primary keys, NOT NULL, DEFAULT, CHECK, one keyed by its hidden row id), a second
// schema, views (one over another), materialized views, indexes (plain and unique), a comment, a
// SQL function a DEFAULT and a CHECK call, and a source, dumped in plain and custom (-Fc) format.
// The plain dump restores with `psql -f` and the custom one with `pg_restore -d` (then again with
// --clean over itself) into fresh oxbow servers: every table's, view's and materialized view's
// rows equal the original's, the primary key refuses a duplicate, and a second dump of the
// restored database prints the same. The plain dump also restores into PostgreSQL 15 (the oracle:
// it is PostgreSQL's SQL and the rows there equal oxbow's). oxbow_catalog and the source are not
// dumped. A missing pg_dump, pg_restore or psql fails the test naming the package.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

const SETUP = [
  `create table accounts (
     id int primary key,
     name text not null,
     balance numeric(12,2) default 0,
     opened timestamptz default '2026-01-01 00:00:00+00',
     tags text[],
     meta jsonb,
     active boolean not null default true,
     check (balance >= -100)
   )`,
  `insert into accounts values
     (1, 'ada', 10.50, '2026-02-01 10:00:00+00', '{a,b}', '{"k": [1, 2]}', true),
     (2, E'tab\\there', -3, '2026-02-02 11:30:00+00', '{}', null, true),
     (3, E'line\\nbreak and back\\\\slash', 0, null, null, '{"q": "it''s"}', false),
     (4, 'zürich €', 99999.99, '2026-03-01 00:00:00+00', '{"x y",NULL}', '[]', true)`,
  `insert into accounts (id, name) values (5, 'defaults')`,
  // No primary key: keyed by its hidden row id; duplicate rows stay two rows.
  `create table events (account_id int not null, kind text, amount float8, at timestamp, payload bytea)`,
  `insert into events values
     (1, 'deposit', 10.5, '2026-02-01 10:00:00', '\\x00ff'),
     (1, 'deposit', 10.5, '2026-02-01 10:00:00', '\\x00ff'),
     (2, 'withdraw', -3.25, '2026-02-02 12:00:00', null),
     (4, null, 0.1, null, '\\x')`,
  `create schema sales`,
  `create table sales.orders (order_id bigint primary key, account int not null, total numeric, day date, constraint positive_total check (total > 0))`,
  `insert into sales.orders values (10, 1, 5.5, '2026-02-01'), (11, 1, 7, '2026-02-01'), (12, 4, 100.25, '2026-02-03')`,
  `create index events_account on events (account_id)`,
  `create unique index accounts_name on accounts (name)`,
  `create view active_accounts as select id, name from accounts where active`,
  `create view active_names as select name from active_accounts where id > 1`,
  `create materialized view totals_by_kind as
     select e.kind, count(*) as n, sum(e.amount) as total from events e join accounts a on a.id = e.account_id group by e.kind`,
  `create materialized view sales.daily as select day, count(*) as orders, sum(total) as total from sales.orders group by day`,
  `comment on table accounts is 'who holds what'`,
  // A SQL function that a DEFAULT and a CHECK call: dumped first, called by its qualified name.
  `create function plus_one(x int) returns int language sql immutable return x + 1`,
  `create table scores (id int primary key, score int default plus_one(41), check (plus_one(score) > 0))`,
  `insert into scores (id) values (1)`,
  `insert into scores values (2, 7)`,
];

/** A finite datagen source: a source is not dumped (its rows come from its connector). */
const SOURCE = "create source ticks (id int, v int) with (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '5', fields.v.min = '0', fields.v.max = '9')";

function requireTool(tool: string): void {
  const found = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  if (found.status !== 0) throw new Error(`${tool} is not installed: apt-get install postgresql-client (.ci/run installs it)`);
}

/** Values exactly as the server prints them. */
const rawTypes = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, types: rawTypes });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Every user table, view and materialized view (schema-qualified) with its rows, sorted. */
async function contents(url: string): Promise<Record<string, string[][]>> {
  return withClient(url, async (client) => {
    const relations = await client.query<{ schema: string; name: string }>({
      text: `select n.nspname as schema, c.relname as name from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
             where c.relkind in ('r', 'v', 'm') and n.nspname in ('public', 'sales') order by 1, 2`,
    });
    const result: Record<string, string[][]> = {};
    for (const { schema, name } of relations.rows) {
      const rows = await client.query({ text: `select * from "${schema}"."${name}"`, rowMode: 'array' });
      result[`${schema}.${name}`] = (rows.rows as (string | null)[][]).map((row) => row.map((value) => (value === null ? '<null>' : value))).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    }
    return result;
  });
}

function oxbowUrl(server: OxbowServer): string {
  return `postgresql://oxbow@${server.host}:${server.port}/oxbow`;
}

function pgDump(server: OxbowServer, args: readonly string[]): string {
  return execFileSync('pg_dump', ['-h', server.host, '-p', String(server.port), '-U', 'oxbow', ...args, 'oxbow'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

function run(tool: string, args: readonly string[]): void {
  const result = spawnSync(tool, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed (${result.status}):\n${result.stdout}${result.stderr}`);
}

/** The dump without the lines that differ between runs (\restrict keys, version comments). */
function stable(dump: string): string {
  return dump
    .split('\n')
    .filter((line) => !line.startsWith('\\restrict') && !line.startsWith('\\unrestrict') && !line.startsWith('-- Dumped'))
    .join('\n');
}

describe('pg_dump and restore', () => {
  let source: OxbowServer | undefined;
  let dir: string;
  let original: Record<string, string[][]>;
  let plain: string;

  beforeAll(async () => {
    for (const tool of ['pg_dump', 'pg_restore', 'psql']) requireTool(tool);
    dir = mkdtempSync(join(tmpdir(), 'oxbow-dump-'));
    source = await startOxbow();
    await withClient(oxbowUrl(source), async (client) => {
      for (const statement of SETUP) await client.query(statement);
      await client.query(SOURCE);
    });
    original = await contents(oxbowUrl(source));
    plain = pgDump(source, []);
  }, 120_000);

  afterAll(async () => {
    await source?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('dumps the user objects as PostgreSQL writes them, not oxbow_catalog or sources', () => {
    expect(original['public.accounts']).toHaveLength(5);
    expect(original['public.events']).toHaveLength(4);
    expect(original['public.totals_by_kind']!.length).toBeGreaterThan(0);
    expect(plain).toMatch(/^CREATE TABLE public\.accounts \($/m);
    expect(plain).toMatch(/^CREATE TABLE sales\.orders \($/m);
    expect(plain).toMatch(/CONSTRAINT positive_total CHECK/);
    expect(plain).toMatch(/^ {4}ADD CONSTRAINT accounts_pkey PRIMARY KEY \(id\);$/m);
    expect(plain).toMatch(/^CREATE UNIQUE INDEX accounts_name ON public\.accounts USING btree \(name\);$/m);
    expect(plain).toMatch(/^CREATE INDEX events_account ON public\.events USING btree \(account_id\);$/m);
    expect(plain).toMatch(/^CREATE MATERIALIZED VIEW public\.totals_by_kind AS$/m);
    expect(plain).toMatch(/^REFRESH MATERIALIZED VIEW public\.totals_by_kind;$/m);
    expect(plain).toMatch(/^CREATE VIEW public\.active_names AS$/m);
    expect(plain).toMatch(/^COMMENT ON TABLE public\.accounts IS 'who holds what';$/m);
    expect(plain).toMatch(/^CREATE FUNCTION public\.plus_one\(x integer\) RETURNS integer$/m);
    expect(plain).toMatch(/score integer DEFAULT public\.plus_one\(41\)/);
    expect(plain).toMatch(/^COPY public\.accounts \(id, name, balance, opened, tags, meta, active\) FROM stdin;$/m);
    // A view reads relations by their schema-qualified names (the restore's search_path is empty).
    expect(plain).toMatch(/from public\.active_accounts/);
    expect(plain).not.toMatch(/oxbow_catalog/);
    expect(plain).not.toMatch(/ticks|datagen|SERVER/i);
  });

  it('a plain dump restores with psql into a fresh oxbow with the same rows', async () => {
    const file = join(dir, 'dump.sql');
    writeFileSync(file, plain);
    const target = await startOxbow();
    try {
      run('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', oxbowUrl(target), '-f', file]);
      expect(await contents(oxbowUrl(target))).toEqual(original);
      expect(stable(pgDump(target, []))).toBe(stable(plain));
      await withClient(oxbowUrl(target), async (client) => {
        await expect(client.query("insert into accounts (id, name) values (1, 'again')")).rejects.toMatchObject({ code: '23505' });
        await expect(client.query("insert into sales.orders values (13, 1, -1, '2026-02-04')")).rejects.toMatchObject({ code: '23514' });
        // The restored materialized view is maintained.
        await client.query("insert into events values (5, 'deposit', 1, null, null)");
        await client.query("insert into accounts (id, name) values (6, 'late')");
        await client.query("insert into events values (6, 'late', 2, null, null)");
        const late = await client.query({ text: "select n, total from totals_by_kind where kind = 'late'", rowMode: 'array' });
        expect(late.rows).toEqual([['1', '2']]);
      });
    } finally {
      await target.stop();
    }
  }, 120_000);

  it('a custom-format dump restores with pg_restore into a fresh oxbow with the same rows', async () => {
    const file = join(dir, 'dump.custom');
    pgDump(source!, ['-Fc', '-f', file]);
    const target = await startOxbow();
    try {
      run('pg_restore', ['--exit-on-error', '-d', oxbowUrl(target), file]);
      expect(await contents(oxbowUrl(target))).toEqual(original);
      expect(stable(pgDump(target, []))).toBe(stable(plain));
      // Restored again over itself: --clean drops each object (its primary keys first) and recreates it.
      run('pg_restore', ['--clean', '--if-exists', '--exit-on-error', '-d', oxbowUrl(target), file]);
      expect(await contents(oxbowUrl(target))).toEqual(original);
    } finally {
      await target.stop();
    }
  }, 120_000);

  it('the plain dump is PostgreSQL 15 SQL: restored there, the rows are the same', async () => {
    let postgres: PostgresServer | undefined;
    try {
      postgres = await startPostgres();
      await postgres.query('create role oxbow superuser login');
      await postgres.query('create database restored owner oxbow');
      const file = join(dir, 'dump-for-postgres.sql');
      writeFileSync(file, plain);
      run('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', `postgresql://oxbow@127.0.0.1:${postgres.port}/restored`, '-f', file]);
      expect(await contents(`postgresql://oxbow@127.0.0.1:${postgres.port}/restored`)).toEqual(original);
    } finally {
      await postgres?.stop();
    }
  }, 120_000);
});

// Sequences, serial and identity columns: pg_dump reads each sequence's last_value and is_called
// and writes CREATE SEQUENCE, ALTER SEQUENCE ... OWNED BY, setval() and the identity clause.
describe('pg_dump and restore with sequences', () => {
  it('serial, identity and a sequence restore with their next values', async () => {
    const source = await startOxbow();
    const target = await startOxbow();
    const dir = mkdtempSync(join(tmpdir(), 'oxbow-dump-seq-'));
    try {
      await withClient(oxbowUrl(source), async (client) => {
        await client.query('create table numbered (id serial primary key, note text, other int generated by default as identity)');
        await client.query("insert into numbered (note) values ('a'), ('b')");
        await client.query('create sequence counter start 100');
        await client.query("select nextval('counter')");
      });
      const file = join(dir, 'dump.sql');
      writeFileSync(file, pgDump(source, []));
      run('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', oxbowUrl(target), '-f', file]);
      expect(await contents(oxbowUrl(target))).toEqual(await contents(oxbowUrl(source)));
      await withClient(oxbowUrl(target), async (client) => {
        const next = await client.query({ text: "select nextval('counter')", rowMode: 'array' });
        expect(next.rows).toEqual([['101']]);
        const inserted = await client.query({ text: "insert into numbered (note) values ('c') returning id, other", rowMode: 'array' });
        expect(inserted.rows).toEqual([['3', '3']]);
      });
    } finally {
      await Promise.all([source.stop(), target.stop()]);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
