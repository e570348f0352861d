// The command tag of CREATE MATERIALIZED VIEW over the wire, with PostgreSQL 15 as the oracle: the
// same statements against both servers, through the pg driver (result.command / rowCount) and the
// real psql binary (the tag it prints). PostgreSQL answers `SELECT n` (the view's rows) and, for
// IF NOT EXISTS on an existing view, a NOTICE and `CREATE MATERIALIZED VIEW`.

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { oxbowAndPostgres } from '../support/server-pair.js';

const servers = oxbowAndPostgres();

const SETUP = ['create table tag_t (k int primary key, g int)', 'insert into tag_t values (1, 1), (2, 1), (3, 2)'];
const STATEMENTS = [
  'create materialized view tag_groups as select g, count(*) as n from tag_t group by g',
  'create materialized view tag_empty as select k from tag_t where k > 100',
  'create materialized view if not exists tag_groups as select 1 as one',
  'create materialized view tag_keyless as select count(*) as n from tag_t',
];

async function tags(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const sql of SETUP) await client.query(sql);
    const out: string[] = [];
    for (const sql of STATEMENTS) {
      const result = await client.query(sql);
      out.push(`${result.command} ${result.rowCount ?? ''}`.trim());
    }
    for (const name of ['tag_groups', 'tag_empty', 'tag_keyless']) await client.query(`drop materialized view ${name}`);
    await client.query('drop table tag_t');
    return out;
  } finally {
    await client.end();
  }
}

/** psql's output (the tags it prints) of a script creating views. */
function psqlTags(port: number, user: string, database: string): string {
  const sql = `${SETUP.join(';\n')};\ncreate materialized view tag_psql as select g from tag_t;\ncreate materialized view if not exists tag_psql as select 1;\ndrop materialized view tag_psql;\ndrop table tag_t;\n`;
  const result = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', user, '-d', database, '-v', 'ON_ERROR_STOP=1'], { input: sql, encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout;
}

describe('CREATE MATERIALIZED VIEW command tag', () => {
  it('equals PostgreSQL\'s through the pg driver', async () => {
    const expected = await tags(servers.postgres.url);
    // pg reports the first word of a tag without a row count.
    expect(expected).toEqual(['SELECT 2', 'SELECT 0', 'CREATE', 'SELECT 1']);
    expect(await tags(servers.oxbow.url)).toEqual(expected);
  });

  it('equals PostgreSQL\'s as psql prints it', () => {
    const expected = psqlTags(servers.postgres.port, 'postgres', 'postgres');
    expect(expected).toBe('CREATE TABLE\nINSERT 0 3\nSELECT 3\nCREATE MATERIALIZED VIEW\nDROP MATERIALIZED VIEW\nDROP TABLE\n');
    expect(psqlTags(servers.oxbow.port, 'oxbow', 'oxbow')).toBe(expected);
  });
});
