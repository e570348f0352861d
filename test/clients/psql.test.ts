// The real psql 15 binary, spawned against the real oxbow server and against a real PostgreSQL 15
// set up the same way (user oxbow, database oxbow): a script with DDL, DML, every common type,
// COPY FROM STDIN (text and CSV) inline, \copy to stdout, errors in the middle of a script,
// multi-statement -c strings and expanded output must print the same text.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgresAsOxbow, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';

let postgres: PostgresServer;
let oxbow: OxbowServer;
let scratch: string;

function psql(port: number, args: readonly string[], input?: string): string {
  const result = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'oxbow', '-d', 'oxbow', ...args], {
    encoding: 'utf8',
    input,
    env: { ...process.env, PGTZ: 'UTC', PAGER: '', PSQL_PAGER: '', PGOPTIONS: '' },
    timeout: 60_000,
  });
  return `${result.stdout}${result.stderr}exit ${result.status}\n`;
}

beforeAll(async () => {
  [postgres, oxbow] = await Promise.all([startPostgresAsOxbow(), startOxbow()]);
  scratch = mkdtempSync(join(tmpdir(), 'oxbow-psql-'));
}, 120_000);

afterAll(async () => {
  await oxbow?.stop();
  await postgres?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

function both(args: readonly string[], input?: string): string {
  const mine = psql(oxbow.port, args, input);
  const theirs = psql(postgres.port, args, input);
  expect(mine).toBe(theirs);
  return mine;
}

const SCRIPT = String.raw`
create table items (id int primary key, name varchar, price numeric(10,2), ok boolean, at timestamptz, d date, f float8, j jsonb, b bytea, big bigint);
insert into items values (1, 'apple', 1.50, true, '2024-01-02 03:04:05+00', '2024-02-29', 1.5, '{"a": [1, 2]}', '\x0102', 9007199254740993);
insert into items (id, name, f) values (5, 'ünïcødé ✓', -0.000123), (6, E'tab\there', 1e300);
copy items (id, name, price) from stdin;
2	pear	2.25
3	fig	\N
\.
copy items (id, name) from stdin (format csv);
4,"kiwi, green"
\.
select * from items order by id;
select count(*) from items; select 1/0; select 'after' as a;
select nope;
\copy (select id, name from items order by id) to stdout
\x
select id, name, price from items where id = 1;
\x
update items set price = price * 2 where price is not null;
delete from items where id = 3;
select id, price from items order by id;
drop table if exists nope;
select array[1,2,3] as a, array['x',null]::text[] as b;
`;

describe('psql', () => {
  it('runs a script (-f) with DDL, DML, COPY, errors and \\x exactly as PostgreSQL prints it', () => {
    const file = join(scratch, 'script.sql');
    writeFileSync(file, SCRIPT);
    const output = both(['-f', file]);
    expect(output).toContain('COPY 2');
    expect(output).toContain('ERROR:  division by zero');
  });

  it('a multi-statement -c string: results up to the first error', () => {
    both(['-c', 'select 1 as a; select 2 as b']);
    both(['-c', 'select 1 as a; select 1/0; select 3 as c']);
  });

  it('COPY FROM STDIN of 20000 rows piped into psql', () => {
    both(['-c', 'create table bulk (id int primary key, label text, amount numeric(12,2))']);
    const lines: string[] = [];
    for (let i = 0; i < 20_000; i++) lines.push(`${i}\tlabel ${i}\t${(i * 1.25).toFixed(2)}`);
    both(['-c', 'copy bulk from stdin'], `${lines.join('\n')}\n\\.\n`);
    both(['-c', 'select count(*), sum(amount), min(label), max(id) from bulk']);
  });

  it('ON_ERROR_STOP stops at the first error with exit code 3', () => {
    const output = both(['-v', 'ON_ERROR_STOP=1', '-c', 'select 1/0', '-c', 'select 2']);
    expect(output).toContain('exit 1');
    const file = join(scratch, 'stop.sql');
    writeFileSync(file, 'select 1 as a;\nselect nope;\nselect 2 as b;\n');
    expect(both(['-v', 'ON_ERROR_STOP=1', '-f', file])).toContain('exit 3');
  });

  it('unaligned and CSV output modes', () => {
    both(['-A', '-t', '-c', "select 1, 'x', null::int, true"]);
    both(['--csv', '-c', `select 'a,b' as s, 'q"uote' as t, 1.5::numeric as n`]);
  });
});
