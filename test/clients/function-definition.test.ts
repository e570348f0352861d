// pg_get_functiondef of a SQL-standard body (`RETURN expression`): PostgreSQL prints the
// expression deparsed from its stored tree (`RETURN (x + 1)`), oxbow keeps the text as written, so
// every line but the last must equal PostgreSQL 15's and the last is `RETURN` with the statement's
// own expression. (The `AS $$...$$` form is compared byte for byte, through psql's \sf, in
// test/psql/function-script.sql.)
import pg from 'pg';
import { expect, it } from 'vitest';
import { oxbowAndPostgres } from '../support/server-pair.js';

const servers = oxbowAndPostgres();

const FUNCTIONS = [
  { create: 'create function inc(x int) returns int language sql immutable strict return x + 1', name: 'inc', expression: 'x + 1' },
  { create: 'create function label(n numeric, "Unit" text) returns text language sql stable return "Unit" || n', name: 'label', expression: '"Unit" || n' },
  { create: 'create function plain() returns bigint language sql return 42', name: 'plain', expression: '42' },
];

it('pg_get_functiondef of a RETURN body: PostgreSQL\'s header lines, the expression as written', async () => {
  const oxbow = new pg.Client({ connectionString: servers.oxbow.url });
  await oxbow.connect();
  try {
    for (const fn of FUNCTIONS) {
      await servers.postgres.query(fn.create);
      expect((await oxbow.query(fn.create)).command).toBe('CREATE');
      const sql = `select pg_get_functiondef('${fn.name}'::regproc)`;
      const expected = (await servers.postgres.query(sql)).rows[0]![0]!.split('\n');
      const actual = ((await oxbow.query({ text: sql, rowMode: 'array' })).rows[0] as string[])[0]!.split('\n');
      // The body line, then the final newline, as in PostgreSQL.
      expect(actual.length).toBe(expected.length);
      expect(actual.slice(0, -2)).toEqual(expected.slice(0, -2));
      expect(expected.at(-2)).toMatch(/^RETURN /);
      expect(actual.at(-2)).toBe(`RETURN ${fn.expression}`);
      expect(actual.at(-1)).toBe('');
    }
  } finally {
    await oxbow.end();
  }
});
