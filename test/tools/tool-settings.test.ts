// The settings client tools read or set, differential against PostgreSQL 15: pg_dump's session
// setup (PostgreSQL 15's pg_dump sends these before anything else, and stopped at the first
// unknown one), and the read-only limits JDBC drivers read (pgjdbc's getImportedKeys reads
// max_index_keys from pg_settings).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from '../support/pg-pair.js';

const PG_DUMP_SETUP = [
  "SELECT pg_catalog.set_config('search_path', '', false)",
  'SET DATESTYLE = ISO',
  'SET INTERVALSTYLE = POSTGRES',
  'SET extra_float_digits TO 3',
  'SET synchronize_seqscans TO off',
  'SET statement_timeout = 0',
  'SET lock_timeout = 0',
  'SET idle_in_transaction_session_timeout = 0',
  'SET row_security = off',
  'SET quote_all_identifiers = true',
];

const SETTINGS = ['synchronize_seqscans', 'quote_all_identifiers', 'max_index_keys', 'max_function_args', 'lc_collate', 'lc_ctype', 'data_checksums', 'max_identifier_length'];

let pair: PgPair;

beforeAll(async () => {
  pair = await startPgPair();
}, 120_000);

afterAll(async () => {
  await pair?.stop();
});

async function both(sql: string): Promise<[unknown[][], unknown[][]]> {
  const [onPostgres, onOxbow] = await Promise.all([pair.onPostgres.query({ text: sql, rowMode: 'array' }), pair.onOxbow.query({ text: sql, rowMode: 'array' })]);
  return [onPostgres.rows, onOxbow.rows];
}

describe('settings client tools use', () => {
  it("accepts pg_dump's session setup and shows what it set", async () => {
    for (const sql of PG_DUMP_SETUP) {
      const [onPostgres, onOxbow] = await both(sql);
      expect(onOxbow, sql).toEqual(onPostgres);
    }
    for (const name of ['synchronize_seqscans', 'quote_all_identifiers', 'extra_float_digits', 'row_security']) {
      const [onPostgres, onOxbow] = await both(`SHOW ${name}`);
      expect(onOxbow, name).toEqual(onPostgres);
    }
  });

  it('lists the settings in pg_settings as PostgreSQL 15 does', async () => {
    const [onPostgres, onOxbow] = await both(
      `SELECT name, setting, unit, vartype, context FROM pg_catalog.pg_settings WHERE name IN (${SETTINGS.map((name) => `'${name}'`).join(', ')}) ORDER BY name`,
    );
    expect(onPostgres.length).toBe(SETTINGS.length);
    expect(onOxbow).toEqual(onPostgres);
  });

  it('SHOW ssl is off without a certificate, as PostgreSQL with ssl off, and SET ssl is refused (55P02)', async () => {
    const [onPostgres, onOxbow] = await both('SHOW ssl');
    expect(onPostgres).toEqual([['off']]);
    expect(onOxbow).toEqual(onPostgres);
    const [postgresError, oxbowError] = await Promise.all([
      pair.onPostgres.query('SET ssl = on').then(() => undefined, (error: { code?: string }) => error.code),
      pair.onOxbow.query('SET ssl = on').then(() => undefined, (error: { code?: string }) => error.code),
    ]);
    expect(postgresError).toBe('55P02');
    expect(oxbowError).toBe(postgresError);
  });

  it('refuses to SET a read-only one, as PostgreSQL does', async () => {
    const [postgresError, oxbowError] = await Promise.all([
      pair.onPostgres.query('SET max_index_keys = 64').then(() => undefined, (error: { code?: string }) => error.code),
      pair.onOxbow.query('SET max_index_keys = 64').then(() => undefined, (error: { code?: string }) => error.code),
    ]);
    expect(postgresError).toBe('55P02');
    expect(oxbowError).toBe(postgresError);
  });
});
