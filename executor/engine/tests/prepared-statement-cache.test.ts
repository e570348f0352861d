// The session's cache of extended-protocol statements (prepared-statement-cache.ts) over the
// in-memory store: a prepare() of the same text and declared types returns the statement prepared
// before while the catalog and the search path are unchanged, and a new one after DDL or SET
// search_path; a failing prepare is not kept; utility statements are not kept. Expected values by
// hand (the over-the-wire differential test against PostgreSQL is
// test/clients/prepared-statement-cache.test.ts).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openHarness, type Harness } from '../../stream/tests/stream-harness.js';
import { SqlError } from '../../../sql/errors.js';
import { type } from '../../../sql/types.js';
import type { PreparedStatement } from '../engine.js';
import type { Row, Value } from '../../../sql/value.js';
import type { PreparedStatementCache } from '../prepared-statement-cache.js';
import type { StatementPreparer } from '../statement-preparer.js';

let h: Harness;

beforeEach(async () => {
  h = await openHarness();
});
afterEach(async () => {
  await h.close();
});

function counts(): PreparedStatementCache<unknown>['counts'] {
  return { ...(h.session as unknown as { preparer: StatementPreparer }).preparer.preparedStatements.counts };
}

async function execute(statement: PreparedStatement, parameters: Value[]): Promise<Row[]> {
  const result = await h.session.execute(statement, { parameters });
  return result.kind === 'rows' ? result.cursor.next(0) : [];
}

describe('the prepared statement cache', () => {
  it('returns the statement prepared before for the same text and declared types', async () => {
    await h.rows('create table t (id int primary key, v int)');
    const insert = 'insert into t values ($1, $2)';
    const first = h.session.prepare(insert, []);
    for (let id = 1; id <= 5; id++) {
      const statement = h.session.prepare(insert, []);
      expect(statement).toBe(first);
      await execute(statement, [id, id * 10]);
    }
    expect(counts()).toEqual({ hits: 5, added: 1 });
    // Declared types are part of the key: int8 parameters are another statement, with their own types.
    const typed = h.session.prepare(insert, [type('int8'), undefined]);
    expect(typed).not.toBe(first);
    expect(typed.parameterTypes.map((parameterType) => parameterType.name)).toEqual(['int8', 'int4']);
    expect(first.parameterTypes.map((parameterType) => parameterType.name)).toEqual(['int4', 'int4']);
    expect(await h.rows('select id, v from t order by id')).toEqual([1, 2, 3, 4, 5].map((id) => [id, id * 10]));
  });

  it('prepares again after DDL: the new statement describes and reads the new columns', async () => {
    await h.rows('create table t (id int primary key)');
    await h.rows('insert into t values (1)');
    const before = h.session.prepare('select * from t where id = $1', []);
    expect(before.columns?.map((column) => column.name)).toEqual(['id']);
    await h.rows('alter table t add column s text default $$x$$');
    const after = h.session.prepare('select * from t where id = $1', []);
    expect(after).not.toBe(before);
    expect(after.columns?.map((column) => column.name)).toEqual(['id', 's']);
    expect(await execute(after, [1])).toEqual([[1, 'x']]);
    expect(h.session.prepare('select * from t where id = $1', [])).toBe(after);
  });

  it('prepares again when the search path changes: the name resolves in the new schema', async () => {
    await h.rows('create schema other');
    await h.rows('create table t (id int primary key, s text)');
    await h.rows('create table other.t (id int primary key, s text)');
    await h.rows("insert into t values (1, 'public')");
    await h.rows("insert into other.t values (1, 'other')");
    const text = 'select s from t where id = $1';
    expect(await execute(h.session.prepare(text, []), [1])).toEqual([['public']]);
    await h.rows('set search_path = other, public');
    expect(await execute(h.session.prepare(text, []), [1])).toEqual([['other']]);
    await h.rows('set search_path = public');
    expect(await execute(h.session.prepare(text, []), [1])).toEqual([['public']]);
    expect(counts()).toEqual({ hits: 0, added: 3 });
  });

  it('keeps neither a failing statement nor a utility statement', async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      let failure: unknown;
      try {
        h.session.prepare('select nope from missing where id = $1', []);
      } catch (error) {
        failure = error;
      }
      expect(failure).toBeInstanceOf(SqlError);
      expect((failure as SqlError).code).toBe('42P01');
    }
    const set = h.session.prepare('set application_name = $$a$$', []);
    expect(h.session.prepare('set application_name = $$a$$', [])).not.toBe(set);
    expect(counts()).toEqual({ hits: 0, added: 0 });
  });
});
