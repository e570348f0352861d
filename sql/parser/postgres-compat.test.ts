// The parser against PostgreSQL itself:
//   - syntax errors: the same SQLSTATE, message and 1-based character position as a real
//     PostgreSQL 15 server gives for the same query string (multi-statement strings included);
//   - every query psql 15 sends for \d, \d NAME, \dt, \dv, \dm, \l, \dn, \df, \d+, \di, \ds, \du,
//     \dT (captured with psql -E, fixtures/psql-15-queries.sql; \conninfo sends no query), and a
//     pg_dump --schema-only output (fixtures/pg-dump-schema.sql): each parses to exactly the tree
//     libpg-query gives for the raw text (oxbow's layer changes nothing it has no reason to), and
//     the real server accepts each psql query;
//   - every query pg_dump sent to make that dump (fixtures/pg-dump-queries.sql, from the server's
//     log_statement=all log) parses to libpg-query's own tree.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModule, parseSync } from 'libpg-query';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../../test/support/postgres.js';
import { SqlError } from '../errors.js';
import { initParser, parse } from './index.js';

const fixtures = join(import.meta.dirname, 'fixtures');

let server: PostgresServer;

beforeAll(async () => {
  await Promise.all([initParser(), loadModule()]);
  server = await startPostgres();
});

afterAll(async () => {
  await server?.stop();
});

function oursError(sql: string): { code: string; message: string; position: number | undefined } {
  try {
    parse(sql);
  } catch (error) {
    if (!(error instanceof SqlError)) throw error;
    return { code: error.code, message: error.message, position: error.position };
  }
  throw new Error(`oxbow accepted: ${sql}`);
}

// (RisingWave's trailing comma in a column list, `create table t (a int,)`, is accepted on purpose.)
const badQueries = [
  'selec 1',
  'select 1 +',
  'select 1 +;',
  'select 1 +   \n  ',
  'select * fro t',
  "select 'é€' fro t",
  'select 😀😀, 1 fro t',
  'select 1; selec 2',
  'select 1;\n  select (1',
  'SELECT * FROM t WHERE',
  "select 'unterminated",
  'select $$unterminated',
  'select "unterminated',
  'select 1 /* unterminated comment',
  '/* c */ selec',
  'insert into t values (1,',
  'select * from t for update of',
  'select 1 from t tablesample',
  'select x::',
  "select E'a\\'b' fro t",
  'update t set a = 1 where',
  'select * from t order by',
  'create materialized view v as',
  'select a from t group by having',
];

describe('syntax errors match PostgreSQL 15', () => {
  for (const sql of badQueries) {
    it(JSON.stringify(sql), async () => {
      const expected = await server.tryQuery(sql);
      expect(expected.ok).toBe(false);
      if (expected.ok) return;
      expect(oursError(sql)).toEqual({ code: expected.code, message: expected.message, position: expected.position });
    });
  }
});

/** Removes location fields equal to 0 (libpg-query omits zero-valued fields; oxbow keeps them). */
function withoutZeroLocations(node: unknown): unknown {
  return JSON.parse(JSON.stringify(node), (key, value) => (key === 'location' && value === 0 ? undefined : value));
}

/** The queries of a fixture file, each after a line starting with `marker` (the rest of that line names it). */
function fixtureQueries(file: string, marker: string): { command: string; sql: string }[] {
  const text = readFileSync(join(fixtures, file), 'utf8');
  const queries: { command: string; sql: string }[] = [];
  for (const block of text.split(new RegExp(`^${marker}`, 'm')).slice(1)) {
    const newline = block.indexOf('\n');
    queries.push({ command: block.slice(0, newline) || file, sql: block.slice(newline + 1).trim() });
  }
  return queries;
}

function psqlQueries(): { command: string; sql: string }[] {
  return fixtureQueries('psql-15-queries.sql', '-- psql: ');
}

describe('psql 15 catalog queries', () => {
  const queries = psqlQueries();

  it('covers the common psql describe and list commands', () => {
    const commands = new Set(queries.map((query) => query.command));
    for (const command of ['\\d', '\\d shop.orders', '\\dt', '\\dv', '\\dm', '\\l', '\\dn', '\\df']) expect(commands).toContain(command);
    expect(queries.length).toBeGreaterThanOrEqual(40);
  });

  it('each parses to the same tree as PostgreSQL grammar gives, and PostgreSQL accepts it', async () => {
    for (const { command, sql } of queries) {
      const statements = parse(sql);
      expect(statements, command).toHaveLength(1);
      const raw = (parseSync(sql) as { stmts: { stmt: unknown }[] }).stmts[0]!.stmt;
      expect(withoutZeroLocations(statements[0]!.node), `${command}: ${sql}`).toEqual(raw);
      // The fixture refers to the capture database's objects; only the grammar matters here, so
      // an unknown relation/oid (42P01, 42704, 22P02...) is fine but a syntax error is not.
      const outcome = await server.tryQuery(sql);
      if (!outcome.ok) expect(outcome.code, `${command}: ${outcome.message}`).not.toBe('42601');
    }
  });
});

describe('pg_dump --schema-only', () => {
  it('parses every query pg_dump sends (captured from the server log) to the same tree as PostgreSQL grammar gives', async () => {
    const queries = fixtureQueries('pg-dump-queries.sql', '-- pg_dump');
    expect(queries.length).toBeGreaterThan(50);
    for (const { sql } of queries) {
      const statements = parse(sql);
      const raw = (parseSync(sql) as { stmts: { stmt: unknown }[] }).stmts.map((statement) => statement.stmt);
      expect(statements.map((statement) => withoutZeroLocations(statement.node)), sql).toEqual(raw);
      expect(statements.length, sql).toBeGreaterThan(0);
    }
  });

  // psql meta-commands (\restrict, \connect...) are handled by psql, never sent to a server.
  const dump = readFileSync(join(fixtures, 'pg-dump-schema.sql'), 'utf8').replace(/^\\.*$/gm, (line) => ' '.repeat(line.length));

  it('parses every statement of the dump to the same tree as PostgreSQL grammar gives', () => {
    const statements = parse(dump);
    const raw = (parseSync(dump) as { stmts: { stmt: unknown }[] }).stmts.map((statement) => statement.stmt);
    expect(statements.length).toBe(raw.length);
    expect(statements.length).toBeGreaterThan(20);
    expect(statements.map((statement) => withoutZeroLocations(statement.node))).toEqual(raw);
    const kinds = new Set(statements.map((statement) => Object.keys(statement.node)[0]));
    for (const kind of ['CreateStmt', 'ViewStmt', 'CreateTableAsStmt', 'IndexStmt', 'AlterTableStmt', 'CommentStmt', 'CreateSeqStmt', 'CreateFunctionStmt']) {
      expect(kinds).toContain(kind);
    }
  });
});
