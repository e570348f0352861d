// Set-returning functions in a select list, over the wire, against PostgreSQL 15: several run in
// lockstep (as many rows as the longest, NULL past a shorter one's end), equal calls run once,
// an argument may be a (correlated) scalar subquery, generate_subscripts numbers an array's
// elements, and information_schema._pg_expandarray yields its (x, n) record (what pgcli's and
// pgjdbc's catalog queries need).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from '../support/pg-pair.js';

let pair: PgPair;

beforeAll(async () => {
  pair = await startPgPair([
    'CREATE TABLE owners (id int PRIMARY KEY, tags text[])',
    "INSERT INTO owners VALUES (1, ARRAY['a', 'b', 'c']), (2, ARRAY['x']), (3, NULL), (4, ARRAY[]::text[])",
  ]);
}, 120_000);

afterAll(async () => {
  await pair?.stop();
});

const QUERIES = [
  "SELECT unnest(ARRAY[1, 2, 3]) AS a, unnest(ARRAY['x', 'y']) AS b",
  'SELECT generate_series(1, 3) AS g, unnest(ARRAY[10, 20]) AS u, generate_series(5, 6) AS h',
  'SELECT id, unnest(tags) AS tag, generate_subscripts(tags, 1) AS i FROM owners ORDER BY id, i',
  'SELECT id, generate_subscripts(tags, 1) AS i, generate_subscripts(tags, 2) AS j FROM owners ORDER BY id, i',
  'SELECT id, unnest(tags) AS tag, unnest(tags) AS again FROM owners ORDER BY id, tag',
  'SELECT id, unnest((SELECT array_agg(o.id ORDER BY o.id) FROM owners o WHERE o.id <= owners.id)) AS earlier FROM owners ORDER BY id, earlier',
  'SELECT id, unnest((SELECT array_agg(o.id) FROM owners o WHERE o.id = owners.id)) AS self, unnest(tags) AS tag FROM owners ORDER BY id, tag',
  'SELECT information_schema._pg_expandarray(ARRAY[7, 8, 9]) AS k, (information_schema._pg_expandarray(ARRAY[7, 8, 9])).x AS x',
  'SELECT x.attnum, x.i FROM (SELECT unnest(ARRAY[5, 6]) AS attnum, generate_subscripts(ARRAY[5, 6], 1) AS i) x ORDER BY x.i',
];

describe('set-returning functions in a select list', () => {
  it('return what PostgreSQL 15 returns', async () => {
    for (const sql of QUERIES) {
      const [expected, actual] = await Promise.all([
        pair.onPostgres.query({ text: sql, rowMode: 'array' }),
        pair.onOxbow.query({ text: sql, rowMode: 'array' }).catch((error: Error) => ({ rows: [[`ERROR: ${error.message}`]] })),
      ]);
      expect(actual.rows, sql).toEqual(expected.rows);
    }
  });
});
