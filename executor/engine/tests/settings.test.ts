// SET / SHOW / RESET against a real PostgreSQL 15 session: the same statements on both, every SHOW
// must print the same value, every failure the same SQLSTATE. Plus reported-parameter events and
// the RisingWave no-op settings, which PostgreSQL does not have.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initParser, parse } from '../../../sql/parser/index.js';
import { SqlError } from '../../../sql/errors.js';
import type { Node } from '@pgsql/types';
import { SessionSettings } from '../settings.js';
import { settingStatement } from '../settings-statements.js';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';

let postgres: PostgresServer;
let client: pg.Client;
beforeAll(async () => {
  await initParser();
  postgres = await startPostgres();
  client = await postgres.connect();
});
afterAll(async () => {
  await client?.end();
  await postgres?.stop();
});

function runOxbow(settings: SessionSettings, sql: string): string {
  try {
    const [statement] = parse(sql);
    const outcome = settingStatement(statement!.node as Node, settings, false);
    return outcome.rows === undefined ? 'ok' : String(outcome.rows[0]![0]);
  } catch (error) {
    if (error instanceof SqlError) return `error ${error.code}`;
    throw error;
  }
}

async function runPostgres(sql: string): Promise<string> {
  try {
    const result = await client.query({ text: sql, rowMode: 'array' });
    return result.rows.length === 0 ? 'ok' : String(result.rows[0][0]);
  } catch (error) {
    return `error ${(error as { code: string }).code}`;
  }
}

const script = [
  'show search_path',
  'set search_path to a, "B", public',
  'show search_path',
  "set search_path = '$user', public",
  'show search_path',
  'reset search_path',
  'show search_path',
  'set statement_timeout = 5000',
  'show statement_timeout',
  "set statement_timeout = '90s'",
  'show statement_timeout',
  "set statement_timeout = '1min'",
  'show statement_timeout',
  "set statement_timeout = 'soon'",
  'set statement_timeout to default',
  'show statement_timeout',
  "set datestyle = 'sql, dmy'",
  'show DateStyle',
  'set datestyle = german',
  'show datestyle',
  "set datestyle = 'bogus'",
  'set intervalstyle = iso_8601',
  'show intervalstyle',
  'set intervalstyle = nope',
  'set extra_float_digits = 3',
  'show extra_float_digits',
  'set extra_float_digits = 4',
  "set application_name = 'my app'",
  'show application_name',
  "set time zone 'Europe/Paris'",
  'show timezone',
  "set timezone = 'Not/AZone'",
  'set time zone utc',
  'show time zone',
  'show no_such_setting',
  'set no_such_setting = 1',
  'set integer_datetimes = off',
  'show server_encoding',
  'show integer_datetimes',
  'show standard_conforming_strings',
  'show client_encoding',
  "set client_encoding = 'utf-8'",
  'show client_encoding',
  "set myapp.user_id = '42'",
  'show myapp.user_id',
  'show transaction isolation level',
  'reset all',
  'show application_name',
];

describe('session settings match PostgreSQL 15', () => {
  it('SET / SHOW / RESET print and fail alike', async () => {
    // The oracle server runs with TimeZone=UTC and DateStyle ISO, MDY like oxbow's defaults.
    await client.query("set timezone = 'UTC'");
    const settings = new SessionSettings(() => undefined);
    const differences: string[] = [];
    for (const sql of script) {
      const expected = await runPostgres(sql);
      const actual = runOxbow(settings, sql);
      if (expected !== actual) differences.push(`${sql}: postgres ${JSON.stringify(expected)}, oxbow ${JSON.stringify(actual)}`);
    }
    expect(differences).toEqual([]);
  });

  it('reports changes of reported parameters only, once per change', () => {
    const reported: [string, string][] = [];
    const settings = new SessionSettings((name, value) => reported.push([name, value]));
    runOxbow(settings, "set application_name = 'x'");
    runOxbow(settings, "set application_name = 'x'");
    runOxbow(settings, 'set extra_float_digits = 2');
    runOxbow(settings, "set timezone = 'Asia/Tokyo'");
    runOxbow(settings, 'reset all');
    expect(reported).toEqual([
      ['application_name', 'x'],
      ['TimeZone', 'Asia/Tokyo'],
      ['application_name', ''],
      ['TimeZone', 'UTC'],
    ]);
  });

  it('accepts RisingWave settings as no-ops and validates them', () => {
    const settings = new SessionSettings(() => undefined);
    expect(runOxbow(settings, 'set rw_implicit_flush = true')).toBe('ok');
    expect(runOxbow(settings, 'show rw_implicit_flush')).toBe('true');
    expect(runOxbow(settings, 'set streaming_parallelism = 4')).toBe('ok');
    expect(runOxbow(settings, 'set query_mode = local')).toBe('ok');
    expect(runOxbow(settings, 'set query_mode = sideways')).toBe('error 22023');
    expect(runOxbow(settings, 'set RW_IMPLICIT_FLUSH to maybe')).toBe('error 22023');
  });
});
