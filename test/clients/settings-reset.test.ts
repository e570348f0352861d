// RESET, SET ... TO DEFAULT, set_config(name, NULL, ...), RESET ALL and DISCARD ALL go back to the
// session's start value (what the startup packet set: `options=-c name=value` and
// application_name), not the built-in default; SET LOCAL and set_config(..., true) last until the
// transaction ends; a ROLLBACK undoes a block's SETs. One script, run over the wire by `pg` clients
// started with the same startup parameters against oxbow and a real PostgreSQL 15, must give the
// same results, command tags, SQLSTATEs and warnings statement by statement.
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { rawTypes } from '../support/pg-pair.js';
import { oxbowAndPostgres } from '../support/server-pair.js';

const STARTUP = {
  options: '-c search_path=a,public -c statement_timeout=5s -c extra_float_digits=2 -c myapp.tenant=7',
  application_name: 'start app',
};

const script = [
  'show search_path',
  'show statement_timeout',
  'show extra_float_digits',
  'show application_name',
  'show myapp.tenant',
  // RESET and SET ... TO DEFAULT: the start value.
  'set search_path = public',
  'show search_path',
  'reset search_path',
  'show search_path',
  "set statement_timeout = '1min'",
  'set statement_timeout to default',
  'show statement_timeout',
  // set_config with a NULL value resets too.
  "select set_config('extra_float_digits', '3', false)",
  "select set_config('extra_float_digits', null, false)",
  'show extra_float_digits',
  // Outside a block, a local change lasts for its statement; a failed statement's change is undone.
  "select set_config('application_name', 'in statement', true), current_setting('application_name')",
  'show application_name',
  "select set_config('extra_float_digits', '0', false), 1 / 0",
  'show extra_float_digits',
  "set local work_mem = '64MB'",
  'show work_mem',
  // SET LOCAL inside a block ends with it.
  'begin',
  "set local statement_timeout = '7s'",
  'show statement_timeout',
  'commit',
  'show statement_timeout',
  // ROLLBACK undoes SET.
  'begin',
  "set statement_timeout = '8s'",
  'rollback',
  'show statement_timeout',
  // SET then SET LOCAL: the SET's value stays after COMMIT.
  'begin',
  "set statement_timeout = '8s'",
  "set local statement_timeout = '9s'",
  'show statement_timeout',
  'commit',
  'show statement_timeout',
  // SET LOCAL then SET: the SET's value stays.
  'begin',
  'set local search_path = b',
  'set search_path = c',
  'commit',
  'show search_path',
  // set_config(..., true) and RESET inside a block.
  'begin',
  "select set_config('search_path', 'd', true)",
  'show search_path',
  'reset statement_timeout',
  'show statement_timeout',
  'commit',
  'show search_path',
  'show statement_timeout',
  // A failed block's COMMIT rolls its settings back.
  'begin',
  'set extra_float_digits = 3',
  'select 1 / 0',
  'show extra_float_digits',
  'commit',
  'show extra_float_digits',
  // Custom settings from the startup packet.
  "set myapp.tenant = '8'",
  'reset myapp.tenant',
  'show myapp.tenant',
  // RESET ALL: every start value, and undone by a rollback.
  "set application_name = 'changed'",
  'set search_path = public',
  "set myapp.tenant = '9'",
  'begin',
  'reset all',
  'show application_name',
  'rollback',
  'show application_name',
  'show myapp.tenant',
  'reset all',
  'show application_name',
  'show search_path',
  'show statement_timeout',
  'show extra_float_digits',
  'show myapp.tenant',
  // pg_settings: the start value is reset_val, its source 'client'.
  "select setting, reset_val, source from pg_settings where name = 'statement_timeout'",
  "set statement_timeout = '6s'",
  "select setting, reset_val, source from pg_settings where name = 'statement_timeout'",
  "select setting, reset_val, source from pg_settings where name = 'work_mem'",
  // work_mem in kB with PostgreSQL's units, as pg_settings and SHOW print it.
  "set work_mem = '64MB'",
  'show work_mem',
  'set work_mem = 1024',
  'show work_mem',
  "set work_mem = '1.5MB'",
  'show work_mem',
  "select setting, unit from pg_settings where name = 'work_mem'",
  'set work_mem = 10',
  "set work_mem = '5 parsecs'",
  "set work_mem = 'lots'",
  'show work_mem',
  // DISCARD ALL resets as RESET ALL does.
  'discard all',
  'show statement_timeout',
  'show application_name',
];

const servers = oxbowAndPostgres();
const clients: pg.Client[] = [];

async function connect(url: string): Promise<{ client: pg.Client; notices: string[] }> {
  const client = new pg.Client({ connectionString: url, types: rawTypes, ...STARTUP });
  const notices: string[] = [];
  client.on('notice', (notice) => notices.push(`${notice.severity} ${notice.code}: ${notice.message}`));
  await client.connect();
  clients.push(client);
  return { client, notices };
}

async function run(session: { client: pg.Client; notices: string[] }, sql: string): Promise<string> {
  session.notices.length = 0;
  let outcome: string;
  try {
    const result = await session.client.query({ text: sql, rowMode: 'array' });
    outcome = `${result.command} ${JSON.stringify(result.rows)}`;
  } catch (error) {
    outcome = `error ${(error as { code?: string }).code}`;
  }
  return session.notices.length === 0 ? outcome : `${outcome} ${session.notices.join('; ')}`;
}

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.end()));
});

it('every statement of the script answers as in PostgreSQL 15', async () => {
  const onPostgres = await connect(servers.postgres.url);
  const onOxbow = await connect(servers.oxbow.url);
  const differences: string[] = [];
  const expectedOutcomes: string[] = [];
  for (const sql of script) {
    const expected = await run(onPostgres, sql);
    const actual = await run(onOxbow, sql);
    expectedOutcomes.push(`${sql} -> ${expected}`);
    if (expected !== actual) differences.push(`${sql}: postgres ${expected}, oxbow ${actual}`);
  }
  expect(differences).toEqual([]);
  // The oracle itself shows the behaviour: after RESET the start value comes back, not the
  // built-in default ("$user", public).
  const afterReset = expectedOutcomes[script.indexOf('reset search_path') + 1];
  expect(afterReset).toBe('show search_path -> SHOW [["a,public"]]');
});
