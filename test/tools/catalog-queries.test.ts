// The catalog queries SQLAlchemy 2 (with psycopg 3 and psycopg2), psycopg and asyncpg send,
// recorded from PostgreSQL 15's statement log (golden/catalog-queries.json, made by
// record-catalog-queries.mjs), sent to PostgreSQL 15 and to oxbow over the same schema (made by
// the same driver scripts on both) and compared: the same success or SQLSTATE, the same column
// names, and the same rows, but for values of oid and regclass columns (a table's OID differs
// between the two; built-in types' OIDs are PostgreSQL's in oxbow too). Rows compare as sorted
// lists: an ORDER BY with ties (asyncpg's `ORDER BY depth DESC`) leaves their order to the plan.

import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawTypes } from '../support/pg-pair.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { runPython } from './python.js';

interface Recorded {
  readonly text: string;
  /** Text values, or a user table's OID on the server the query goes to. */
  readonly params: readonly (string | null | { readonly regclass: string })[];
}

const queries = JSON.parse(readFileSync(new URL('./golden/catalog-queries.json', import.meta.url), 'utf8')) as Recorded[];

/** oid, regclass: values that name objects by number. */
const OBJECT_NUMBER_TYPES = new Set([26, 2205]);

/** Queries whose answers differ for a known reason (how the query starts, and the reason). */
const knownDifferences: readonly { readonly start: string; readonly reason: string }[] = [
  { start: 'select pg_catalog.version()', reason: "version() names oxbow (SQLAlchemy reads the PostgreSQL 15 in front)" },
  { start: 'SELECT pg_catalog.pg_type.typname AS name, pg_catalog.format_type(pg_catalog.pg_type.typbasetype', reason: "domains: PostgreSQL lists information_schema's (cardinal_number ...), oxbow has none" },
];

type Outcome = { ok: true; columns: string[]; rows: (string | null)[][] } | { ok: false; code: string; message: string };

async function run(client: pg.Client, query: Recorded): Promise<Outcome> {
  try {
    const values: (string | null)[] = [];
    for (const param of query.params) {
      if (param === null || typeof param === 'string') values.push(param);
      else values.push(((await client.query({ text: 'SELECT $1::regclass::oid::text', values: [param.regclass], rowMode: 'array' })).rows[0] as string[])[0]!);
    }
    const result = await client.query({ text: query.text, values, rowMode: 'array' });
    const keep = result.fields.map((field) => !OBJECT_NUMBER_TYPES.has(field.dataTypeID));
    return {
      ok: true,
      columns: result.fields.map((field) => field.name),
      rows: (result.rows as (string | null)[][])
        .map((row) => row.map((value, index) => (keep[index] ? value : '<oid>')))
        .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0)),
    };
  } catch (error) {
    const failure = error as { code?: string; message: string };
    return { ok: false, code: failure.code ?? '', message: failure.message };
  } finally {
    // A failed query must not leave either connection in a failed block.
    await client.query('ROLLBACK').catch(() => undefined);
  }
}

describe('catalog queries of SQLAlchemy, psycopg and asyncpg: oxbow answers as PostgreSQL 15', () => {
  let oxbow: OxbowServer;
  let postgres: PostgresServer;
  let onOxbow: pg.Client;
  let onPostgres: pg.Client;

  beforeAll(async () => {
    [oxbow, postgres] = await Promise.all([startOxbow(), startPostgres()]);
    // The same schema on both, made by the drivers themselves.
    for (const url of [`oxbow@${oxbow.host}:${oxbow.port}/oxbow`, `postgres@127.0.0.1:${postgres.port}/postgres`]) {
      await runPython('sqlalchemy_flow.py', [`postgresql+psycopg://${url}`]);
      await runPython('asyncpg_flow.py', [`postgresql://${url}`]);
    }
    onOxbow = new pg.Client({ connectionString: oxbow.url, types: rawTypes });
    onPostgres = new pg.Client({ connectionString: postgres.url, types: rawTypes });
    await Promise.all([onOxbow.connect(), onPostgres.connect()]);
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled([onOxbow?.end(), onPostgres?.end()]);
    await Promise.all([oxbow?.stop(), postgres?.stop()]);
  });

  queries.forEach((query, index) => {
    const title = `#${index + 1} ${query.text.split('\n')[0]!.slice(0, 90)}${query.params.length > 0 ? ` (${query.params.length} parameters)` : ''}`;
    const known = knownDifferences.find((difference) => query.text.startsWith(difference.start));
    const test = async () => {
      const [ours, theirs] = [await run(onOxbow, query), await run(onPostgres, query)];
      expect(theirs.ok, `PostgreSQL 15 failed: ${theirs.ok ? '' : theirs.message}`).toBe(true);
      expect(ours).toEqual(theirs);
    };
    if (known === undefined) it(title, test);
    else it.fails(`${title}: known difference, ${known.reason}`, test);
  });
});
