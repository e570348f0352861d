// The PostgreSQL test helper itself: it starts a real server, returns text output untouched,
// reports SQLSTATEs as data, runs in UTC, and stops cleanly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from './postgres.js';

describe('startPostgres', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('answers queries with raw text output', async () => {
    const result = await server.query("SELECT 1::int4 AS a, 1.50::numeric AS b, NULL::text AS c, '2020-01-01'::date AS d");
    expect(result.columns).toEqual(['a', 'b', 'c', 'd']);
    expect(result.rows).toEqual([['1', '1.50', null, '2020-01-01']]);
    expect(result.columnTypeOids).toEqual([23, 1700, 25, 1082]);
  });

  it('runs in UTC and accepts text parameters', async () => {
    const result = await server.query('SELECT current_setting($1), $2::timestamptz::text', ['TimeZone', '2020-01-01 00:00:00+02']);
    expect(result.rows).toEqual([['UTC', '2019-12-31 22:00:00+00']]);
  });

  it('reports errors as data with their SQLSTATE', async () => {
    const outcome = await server.tryQuery("SELECT 'abc'::int4");
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) {
      expect(outcome.code).toBe('22P02');
      expect(outcome.message).toBe('invalid input syntax for type integer: "abc"');
      expect(outcome.position).toBe(8);
    }
    await expect(server.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
  });

  it('listens on loopback with a non-default port', () => {
    expect(server.port).toBeGreaterThan(0);
    expect(server.port).not.toBe(5432);
    expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
  });

  it('stops and frees its connection', async () => {
    const other = await startPostgres();
    const client = await other.connect();
    await client.end();
    await other.stop();
    const { default: pg } = await import('pg');
    const probe = new pg.Client({ connectionString: other.url });
    await expect(probe.connect()).rejects.toThrow();
  });
});
