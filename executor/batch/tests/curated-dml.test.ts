// DML checked against a real PostgreSQL 15: a sequence of INSERT / UPDATE / DELETE statements
// (defaults, ON CONFLICT, FROM / USING, RETURNING, constraint errors) runs on both; after each one
// the row count, the RETURNING rows (or the SQLSTATE) and the whole table contents must match.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';
import { type as scalar } from '../../../sql/types.js';
import { SqlError } from '../../../sql/errors.js';
import { MemoryDatabase } from './memory-tables.js';
import { ready, runText, text } from './harness.js';

const STATEMENTS = [
  "insert into acct values (1, 'ann', 100), (2, 'bob', 50)",
  "insert into acct (id, owner) values (3, 'cat')",
  'insert into acct values (4, null, 10) returning id, balance * 2',
  "insert into acct values (1, 'dup', 0)",
  "insert into acct (owner) values ('nobody')",
  "insert into acct values (1, 'ann2', 1), (5, 'eve', 5) on conflict do nothing",
  "insert into acct values (2, 'bobby', 70) on conflict (id) do update set balance = acct.balance + excluded.balance returning *",
  "insert into acct values (2, 'x', 1) on conflict (id) do update set owner = excluded.owner where acct.balance > 1000 returning *",
  'update acct set balance = balance + 1 where balance is not null returning id, balance',
  "update acct set owner = upper(owner) where owner like '%e%'",
  'update acct set balance = 0 where id = 999',
  'insert into ledger values (1, 10), (1, 20), (3, 5)',
  'update acct a set balance = a.balance - l.amount from ledger l where l.acct = a.id and l.amount = 10 returning a.id, a.balance',
  'delete from acct using ledger where ledger.acct = acct.id and ledger.amount = 5 returning acct.id',
  'update acct set id = id + 100 where id = 4',
  'update acct set id = 1 where id = 2',
  'insert into acct select id + 10, owner, balance from acct where balance > 50',
  'delete from acct where balance is null returning *',
];

let postgres: PostgresServer;
let db: MemoryDatabase;

beforeAll(async () => {
  await ready();
  postgres = await startPostgres();
  await postgres.query("create table acct (id int primary key, owner text, balance int default 7)");
  await postgres.query('create table ledger (acct int, amount int)');
  db = new MemoryDatabase();
  db.createTable('acct', [{ name: 'id', type: scalar('int4'), nullable: false }, { name: 'owner', type: scalar('text') }, { name: 'balance', type: scalar('int4'), defaultSql: '7' }], ['id']);
  db.createTable('ledger', [{ name: 'acct', type: scalar('int4') }, { name: 'amount', type: scalar('int4') }]);
});

afterAll(async () => {
  await postgres?.stop();
});

describe('curated DML: oxbow vs PostgreSQL 15', () => {
  it('every statement has the same effect, count and RETURNING rows', async () => {
    const mismatches: string[] = [];
    for (const raw of STATEMENTS) {
      const sql = raw;
      const theirs = await postgres.tryQuery(sql);
      const expected = theirs.ok ? { count: theirs.rowCount, rows: theirs.rows.map((r) => JSON.stringify(r)).sort() } : { code: theirs.code };
      let actual: unknown;
      try {
        const result = await runText(db, sql);
        actual = { count: result.rowCount, rows: result.rows.map((r) => JSON.stringify(r)).sort() };
      } catch (error) {
        if (!(error instanceof SqlError)) throw error;
        actual = { code: error.code };
      }
      const theirTable = (await postgres.query('select * from acct order by id')).rows.map((r) => JSON.stringify(r));
      const ourTable = (await text(db, 'select * from acct order by id')).map((r) => JSON.stringify(r));
      if (JSON.stringify(expected) !== JSON.stringify(actual) || JSON.stringify(theirTable) !== JSON.stringify(ourTable)) {
        mismatches.push(`${sql}\n  postgres: ${JSON.stringify(expected)} ${JSON.stringify(theirTable)}\n  oxbow:    ${JSON.stringify(actual)} ${JSON.stringify(ourTable)}`);
      }
    }
    expect(mismatches).toEqual([]);
    // The sequence did change the table (guards against both sides failing alike).
    expect((await text(db, 'select count(*) from acct'))[0]![0]).not.toBe('0');
  });
});
