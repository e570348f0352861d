// The planner and batch executor end to end over the in-memory test double: queries, DML and
// errors, with expected results written by hand from SQL's semantics (PostgreSQL's documented
// behaviour), not copied from our output.

import { beforeAll, describe, expect, it } from 'vitest';
import { type as scalar } from '../../../sql/types.js';
import { SqlError } from '../../../sql/errors.js';
import { epochFromMillis } from '../../../sql/epoch.js';
import { DEFAULT_EVAL_CONTEXT } from '../../../sql/functions.js';
import { MemoryDatabase } from './memory-tables.js';
import { plan, ready, run, text } from './harness.js';
import { executePlanned } from '../index.js';

const int4 = scalar('int4');
const text_ = scalar('text');

function database(): MemoryDatabase {
  const db = new MemoryDatabase();
  db.createTable('t', [{ name: 'id', type: int4, nullable: false }, { name: 'v', type: text_ }, { name: 'n', type: int4 }], ['id']);
  db.createTable('u', [{ name: 'id', type: int4 }, { name: 'w', type: text_ }], ['id']);
  db.createTable('k', [{ name: 'x', type: int4 }, { name: 'y', type: text_, defaultSql: "'dflt'" }]);
  return db;
}

async function seeded(): Promise<MemoryDatabase> {
  const db = database();
  await run(db, "insert into t values (1, 'a', 10), (2, 'b', null), (3, null, 30), (4, 'a', 40)");
  await run(db, "insert into u values (1, 'one'), (3, 'three'), (5, 'five')");
  return db;
}

async function failure(promise: Promise<unknown> | (() => unknown)): Promise<SqlError> {
  try {
    if (typeof promise === 'function') await promise();
    else await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SqlError);
    return error as SqlError;
  }
  throw new Error('expected a SqlError');
}

beforeAll(ready);

describe('queries', () => {
  it('projects, filters and sorts with NULLS FIRST/LAST', async () => {
    const db = await seeded();
    expect(await text(db, 'select id, v from t where n > 15 order by id desc')).toEqual([['4', 'a'], ['3', null]]);
    expect(await text(db, 'select v from t order by v nulls first, id')).toEqual([[null], ['a'], ['a'], ['b']]);
    expect(await text(db, 'select v from t order by v desc, id')).toEqual([[null], ['b'], ['a'], ['a']]);
    expect(await text(db, 'select id from t order by n desc nulls last')).toEqual([['4'], ['3'], ['1'], ['2']]);
  });

  it('evaluates three-valued logic, CASE, COALESCE, NULLIF, GREATEST/LEAST', async () => {
    const db = await seeded();
    expect(await text(db, 'select id from t where not (n > 15) order by id')).toEqual([['1']]);
    expect(await text(db, 'select id from t where n > 15 or v = \'b\' order by id')).toEqual([['2'], ['3'], ['4']]);
    expect(await text(db, "select case when n is null then 'none' when n < 20 then 'small' else 'big' end from t order by id")).toEqual([['small'], ['none'], ['big'], ['big']]);
    expect(await text(db, "select coalesce(v, 'z'), nullif(n, 10), greatest(id, 2), least(id, n) from t order by id")).toEqual([
      ['a', null, '2', '1'],
      ['b', null, '2', '2'],
      ['z', '30', '3', '3'],
      ['a', '40', '4', '4'],
    ]);
    expect(await text(db, 'select null::int is distinct from 1, 1 is not distinct from 1, (null::bool) is unknown')).toEqual([['t', 't', 't']]);
  });

  it('aggregates with PostgreSQL result types, FILTER, DISTINCT and HAVING', async () => {
    const db = await seeded();
    const result = await run(db, 'select count(*), count(v), count(distinct v), sum(n), avg(n), min(v), max(n) from t');
    expect(result.planned.columns!.map((c) => c.type.name)).toEqual(['int8', 'int8', 'int8', 'int8', 'numeric', 'text', 'int4']);
    expect(await text(db, 'select count(*), count(v), count(distinct v), sum(n), min(v), max(n) from t')).toEqual([['4', '3', '2', '80', 'a', '40']]);
    expect(await text(db, 'select avg(n) from t')).toEqual([['26.6666666666666667']]);
    expect(await text(db, "select v, count(*) filter (where n > 20), sum(id) from t group by v having count(*) > 0 order by v")).toEqual([
      ['a', '1', '5'],
      ['b', '0', '2'],
      [null, '1', '3'],
    ]);
    expect(await text(db, 'select count(*), sum(n) from t where id > 100')).toEqual([['0', null]]);
    expect(await text(db, 'select id from t group by id having id > 100')).toEqual([]);
    expect(await text(db, "select string_agg(v, ',' order by id desc), bool_and(n > 5), bool_or(n > 35) from t")).toEqual([['a,b,a', 't', 't']]);
    expect(await text(db, 'select array_agg(id order by id) from t')).toEqual([['{1,2,3,4}']]);
  });

  it('rejects ungrouped columns and nested aggregates', async () => {
    const db = await seeded();
    const ungrouped = await failure(() => plan(db, 'select v, count(*) from t'));
    expect([ungrouped.code, ungrouped.message, ungrouped.position]).toEqual(['42803', 'column "t.v" must appear in the GROUP BY clause or be used in an aggregate function', 8]);
    expect((await failure(() => plan(db, 'select sum(count(*)) from t'))).code).toBe('42803');
    expect((await failure(() => plan(db, 'select id from t where count(*) > 1'))).code).toBe('42803');
  });

  it('joins: inner, left, right, full, cross, USING, NATURAL, non-equi', async () => {
    const db = await seeded();
    expect(await text(db, 'select t.id, w from t join u on t.id = u.id order by t.id')).toEqual([['1', 'one'], ['3', 'three']]);
    expect(await text(db, 'select t.id, w from t left join u on t.id = u.id order by t.id')).toEqual([['1', 'one'], ['2', null], ['3', 'three'], ['4', null]]);
    expect(await text(db, 'select t.id, u.id from t right join u on t.id = u.id order by u.id')).toEqual([['1', '1'], ['3', '3'], [null, '5']]);
    expect(await text(db, 'select t.id, u.id from t full join u on t.id = u.id order by coalesce(t.id, u.id)')).toEqual([
      ['1', '1'], ['2', null], ['3', '3'], ['4', null], [null, '5'],
    ]);
    expect(await text(db, 'select count(*) from t cross join u')).toEqual([['12']]);
    expect(await text(db, 'select a.id, b.id from t a join t b on a.v is not distinct from b.v and a.id <> b.id order by 1')).toEqual([['1', '4'], ['4', '1']]);
    expect(await text(db, 'select count(*) from t a join t b on a.v is not distinct from b.v')).toEqual([['6']]);
    expect(await text(db, 'select id, w from t join u using (id) order by id')).toEqual([['1', 'one'], ['3', 'three']]);
    expect(await text(db, 'select * from t natural join u order by id')).toEqual([['1', 'a', '10', 'one'], ['3', null, '30', 'three']]);
    expect(await text(db, 'select t.id, u.id from t join u on t.id < u.id and u.id < 3 order by 1, 2')).toEqual([]);
    expect(await text(db, 'select t.id, u.id from t join u on t.id > u.id order by 1, 2')).toEqual([['2', '1'], ['3', '1'], ['4', '1'], ['4', '3']]);
    expect(await text(db, 'select t.id, u.id from t full join u on t.id = u.id and u.w = \'one\' order by 1, 2')).toEqual([
      ['1', '1'], ['2', null], ['3', null], ['4', null], [null, '3'], [null, '5'],
    ]);
  });

  it('subqueries: scalar, IN, NOT IN with NULL, EXISTS, correlated, LATERAL', async () => {
    const db = await seeded();
    expect(await text(db, 'select id, (select w from u where u.id = t.id) from t order by id')).toEqual([['1', 'one'], ['2', null], ['3', 'three'], ['4', null]]);
    expect(await text(db, 'select id from t where id in (select id from u) order by id')).toEqual([['1'], ['3']]);
    expect(await text(db, 'select id from t where n not in (select n from t where id = 2)')).toEqual([]);
    expect(await text(db, 'select id from t where exists (select 1 from u where u.id = t.id + 1) order by id')).toEqual([['2'], ['4']]);
    expect(await text(db, 'select id from t where n > (select avg(n) from t) order by id')).toEqual([['3'], ['4']]);
    expect(await text(db, 'select t.id, x.w from t, lateral (select w from u where u.id >= t.id order by u.id limit 1) x order by t.id')).toEqual([
      ['1', 'one'], ['2', 'three'], ['3', 'three'], ['4', 'five'],
    ]);
    expect((await failure(run(db, 'select (select id from t)'))).code).toBe('21000');
    expect(await text(db, 'select id, count(*), (select w from u where u.id = t.id) from t group by id order by id')).toEqual([['1', '1', 'one'], ['2', '1', null], ['3', '1', 'three'], ['4', '1', null]]);
    expect((await failure(() => plan(db, 'select v, (select count(*) from u where u.id = t.id) from t group by v'))).code).toBe('42803');
  });

  it('set operations, DISTINCT, DISTINCT ON, LIMIT/OFFSET/FETCH, VALUES, CTEs', async () => {
    const db = await seeded();
    expect(await text(db, 'select id from t union select id from u order by 1')).toEqual([['1'], ['2'], ['3'], ['4'], ['5']]);
    expect(await text(db, 'select id from t union all select id from u order by 1')).toEqual([['1'], ['1'], ['2'], ['3'], ['3'], ['4'], ['5']]);
    expect(await text(db, 'select id from t intersect select id from u order by 1')).toEqual([['1'], ['3']]);
    expect(await text(db, 'select id from t except select id from u order by 1')).toEqual([['2'], ['4']]);
    expect(await text(db, 'select v from (values (1), (1), (2)) x(v) except all select 1 order by 1')).toEqual([['1'], ['2']]);
    expect(await text(db, 'select distinct v from t order by v')).toEqual([['a'], ['b'], [null]]);
    expect(await text(db, 'select distinct on (v) v, id from t order by v, id desc')).toEqual([['a', '4'], ['b', '2'], [null, '3']]);
    expect(await text(db, 'select id from t order by id limit 2 offset 1')).toEqual([['2'], ['3']]);
    expect(await text(db, 'select id from t order by id offset 3 rows fetch first 5 rows only')).toEqual([['4']]);
    expect(await text(db, 'with big as (select id from t where n >= 30) select count(*) from big')).toEqual([['2']]);
    expect(await text(db, "select * from (values (1, 'x'), (2, null)) as v(a, b) order by a desc")).toEqual([['2', null], ['1', 'x']]);
    expect((await failure(run(db, 'select id from t limit -1'))).code).toBe('2201W');
  });

  it('WITH RECURSIVE, pg_typeof, regclass literals, explicit casts truncate to the modifier', async () => {
    const db = await seeded();
    expect(await text(db, 'with recursive r(x) as (select 1 union all select x + 1 from r where x < 5) select sum(x), count(*) from r')).toEqual([['15', '5']]);
    expect(await text(db, 'with recursive r(x) as (select 1 union select x from r) select x from r')).toEqual([['1']]);
    expect(await text(db, 'with recursive chain(id, depth) as (select id, 0 from u where id = 1 union all select u.id, c.depth + 1 from u join chain c on u.id = c.id + 2) select id, depth from chain order by id')).toEqual([
      ['1', '0'], ['3', '1'], ['5', '2'],
    ]);
    expect((await failure(run(db, 'with recursive r(x) as (select 1 union all select x + 1 from r) select count(*) from r'))).code).toBe('54001');
    // regtype: the type's OID (PostgreSQL's int4 23, text 25, numeric 1700); the names it prints over the wire are test/system/catalog-functions.test.ts's
    expect(await text(db, "select pg_typeof(1), pg_typeof('a'::text), pg_typeof(1.5)")).toEqual([['23', '25', '1700']]);
    const t = db.resolveRelation(undefined, 't')!;
    expect(await text(db, "select 't'::regclass = $1", [t.id])).toEqual([['t']]);
    expect(await text(db, "select 'abcdef'::varchar(3)")).toEqual([['abc']]);
    expect((await failure(() => plan(db, "select 'nope'::regclass"))).code).toBe('42P01');
    expect((await failure(() => plan(db, 'select row_number() from t'))).code).toBe('42809');
  });

  it('window functions', async () => {
    const db = await seeded();
    expect(await text(db, 'select id, row_number() over (order by id desc), rank() over (order by v), dense_rank() over (order by v) from t order by id')).toEqual([
      ['1', '4', '1', '1'],
      ['2', '3', '3', '2'],
      ['3', '2', '4', '3'],
      ['4', '1', '1', '1'],
    ]);
    expect(await text(db, 'select id, sum(id) over (order by id), sum(id) over (partition by v), lag(id) over (order by id), lead(id, 2, 0) over (order by id) from t order by id')).toEqual([
      ['1', '1', '5', null, '3'],
      ['2', '3', '2', '1', '4'],
      ['3', '6', '3', '2', '0'],
      ['4', '10', '5', '3', '0'],
    ]);
    expect(await text(db, 'select id, sum(id) over (order by id rows between 1 preceding and 1 following), first_value(id) over (order by id), last_value(id) over (order by id rows between unbounded preceding and unbounded following) from t order by id')).toEqual([
      ['1', '3', '1', '4'],
      ['2', '6', '1', '4'],
      ['3', '9', '1', '4'],
      ['4', '7', '1', '4'],
    ]);
  });

  it('table functions: generate_series and unnest', async () => {
    const db = await seeded();
    expect(await text(db, 'select * from generate_series(1, 7, 3)')).toEqual([['1'], ['4'], ['7']]);
    expect(await text(db, 'select g from generate_series(3, 1, -1) g')).toEqual([['3'], ['2'], ['1']]);
    expect(await text(db, 'select x, o from unnest(array[10, 20]) with ordinality as u(x, o)')).toEqual([['10', '1'], ['20', '2']]);
    expect(await text(db, 'select t.id, g from t, generate_series(1, t.id) g where t.id <= 2 order by 1, 2')).toEqual([['1', '1'], ['2', '1'], ['2', '2']]);
  });

  it('expands plain views, with their column names', async () => {
    const db = await seeded();
    db.createView('big', 'select id, n as amount from t where n >= 30', [{ name: 'id', type: int4 }, { name: 'amount', type: int4 }]);
    expect(await text(db, 'select b.amount from big b join u on u.id = b.id')).toEqual([['30']]);
    expect(await text(db, 'select * from big order by id')).toEqual([['3', '30'], ['4', '40']]);
  });

  it('TUMBLE and HOP time windows (expectations from RisingWave e2e_test/batch/basic/time_window.slt.part)', async () => {
    const db = database();
    db.createTable('w', [{ name: 'row_id', type: int4 }, { name: 'created_at', type: scalar('timestamp') }], ['row_id']);
    await run(db, "insert into w values (1, '2022-01-01 10:00:00'), (5, '2022-01-01 10:33:00'), (8, '2022-01-01 11:02:00')");
    expect(await text(db, "select row_id, window_start, window_end from tumble(w, created_at, interval '30' minute) order by row_id")).toEqual([
      ['1', '2022-01-01 10:00:00', '2022-01-01 10:30:00'],
      ['5', '2022-01-01 10:30:00', '2022-01-01 11:00:00'],
      ['8', '2022-01-01 11:00:00', '2022-01-01 11:30:00'],
    ]);
    expect(await text(db, "select row_id, window_start from tumble(w, created_at, interval '30' minute, interval '13' minute) order by row_id")).toEqual([
      ['1', '2022-01-01 09:43:00'],
      ['5', '2022-01-01 10:13:00'],
      ['8', '2022-01-01 10:43:00'],
    ]);
    expect(await text(db, "select row_id, window_start, window_end from hop(w, created_at, interval '15' minute, interval '30' minute) where row_id = 5 order by window_start")).toEqual([
      ['5', '2022-01-01 10:15:00', '2022-01-01 10:45:00'],
      ['5', '2022-01-01 10:30:00', '2022-01-01 11:00:00'],
    ]);
  });

  it('arrays: = ANY over array values and parameters, subscripts, ARRAY(subquery), set-returning functions in the select list', async () => {
    const db = await seeded();
    expect(await text(db, "select id from t where id = any('{2,4,9}') order by id")).toEqual([['2'], ['4']]);
    expect(await text(db, 'select id from t where id = any($1) order by id', [{ kind: 'array', elements: [1, 3] }])).toEqual([['1'], ['3']]);
    expect(await text(db, "select id from t where n > all('{5,20}') order by id")).toEqual([['3'], ['4']]);
    expect(await text(db, "select id = any('{1,null}'), 5 = any('{1,null}'::int[]) from t where id = 1")).toEqual([['t', null]]);
    expect(await text(db, 'select (array[10, 20, 30])[2], (array[10])[5]')).toEqual([['20', null]]);
    expect(await text(db, 'select array(select id from t where id > 2 order by id desc)')).toEqual([['{4,3}']]);
    expect(await text(db, 'select generate_series(1, 3)')).toEqual([['1'], ['2'], ['3']]);
    expect(await text(db, 'select id, unnest(array[id, id * 10]) from t where id <= 2 order by 1, 2')).toEqual([['1', '1'], ['1', '10'], ['2', '2'], ['2', '20']]);
    expect((await failure(() => plan(db, 'select id from t where generate_series(1, 2) > 1'))).code).toBe('0A000');
  });

  it('parameters take the type of their context', async () => {
    const db = await seeded();
    const planned = plan(db, 'select id from t where id = $1 and v = $2');
    expect(planned.parameterTypes.map((t) => t.name)).toEqual(['int4', 'text']);
    expect(await text(db, 'select id from t where id = $1 and v = $2', [1, 'a'])).toEqual([['1']]);
  });
});

describe('DML', () => {
  it('INSERT with defaults, column lists, SELECT, RETURNING and the hidden row id', async () => {
    const db = await seeded();
    const inserted = await run(db, 'insert into k (x) values (1), (2) returning x, y');
    expect(inserted.commandTag).toBe('INSERT 0 2');
    expect(inserted.rows).toEqual([[1, 'dflt'], [2, 'dflt']]);
    expect((await run(db, 'insert into k select id, v from t where id > 2')).commandTag).toBe('INSERT 0 2');
    expect((await run(db, 'insert into u select 9, null union all select 8, \'eight\'')).commandTag).toBe('INSERT 0 2');
    expect(await text(db, 'select w from u where id >= 8 order by id')).toEqual([['eight'], [null]]);
    expect(await text(db, 'select * from k order by x')).toEqual([['1', 'dflt'], ['2', 'dflt'], ['3', null], ['4', 'a']]);
    expect(plan(db, 'select * from k').columns!.map((c) => c.name)).toEqual(['x', 'y']);
  });

  it('fills missing trailing values with defaults, assigns SET (a, b) = (x, y), DISTINCT ON a non-selected key', async () => {
    const db = await seeded();
    await run(db, 'insert into t values (9)');
    expect(await text(db, 'select v, n from t where id = 9')).toEqual([[null, null]]);
    await run(db, "update t set (v, n) = ('q', id * 2) where id = 9");
    expect(await text(db, 'select v, n from t where id = 9')).toEqual([['q', '18']]);
    expect(await text(db, 'select distinct on (v) id from t order by v, id')).toEqual([['1'], ['2'], ['9'], ['3']]);
  });

  it('ON CONFLICT DO NOTHING / DO UPDATE on the primary key', async () => {
    const db = await seeded();
    expect((await run(db, "insert into u values (1, 'uno'), (7, 'seven') on conflict do nothing")).commandTag).toBe('INSERT 0 1');
    expect(await text(db, "insert into u values (1, 'uno') on conflict (id) do update set w = excluded.w || '!' returning *")).toEqual([['1', 'uno!']]);
    expect(await text(db, 'select w from u where id in (1, 7) order by id')).toEqual([['uno!'], ['seven']]);
    expect((await failure(run(db, "insert into u values (9, 'a'), (9, 'b') on conflict (id) do update set w = 'c'"))).code).toBe('21000');
    expect((await failure(() => plan(db, "insert into u values (1, 'x') on conflict (w) do nothing"))).code).toBe('42P10');
  });

  it('UPDATE with FROM and DELETE with USING, command tags', async () => {
    const db = await seeded();
    const updated = await run(db, "update t set v = u.w from u where t.id = u.id");
    expect(updated.commandTag).toBe('UPDATE 2');
    expect(await text(db, 'select id, v from t order by id')).toEqual([['1', 'one'], ['2', 'b'], ['3', 'three'], ['4', 'a']]);
    expect((await run(db, 'update t set n = n + 1 where n is not null returning id')).rows.length).toBe(3);
    expect(await text(db, 'update t set n = 0 from u where t.id = u.id returning t.id, u.w, n')).toEqual([['1', 'one', '0'], ['3', 'three', '0']]);
    const deleted = await run(db, 'delete from t using u where t.id = u.id');
    expect(deleted.commandTag).toBe('DELETE 2');
    expect(await text(db, 'select id, n from t order by id')).toEqual([['2', null], ['4', '41']]);
    expect((await run(db, 'update t set id = id + 10')).commandTag).toBe('UPDATE 2');
    expect(await text(db, 'select id from t order by id')).toEqual([['12'], ['14']]);
    expect(await text(db, 'delete from t using u where t.id = u.id + 11 returning t.id, u.w')).toEqual([['12', 'one'], ['14', 'three']]);
  });

  it('constraint errors carry their SQLSTATE and leave nothing half-applied', async () => {
    const db = await seeded();
    const duplicate = await failure(run(db, "insert into t values (10, 'x', 1), (1, 'y', 2)"));
    expect(duplicate.code).toBe('23505');
    expect(duplicate.message).toBe('duplicate key value violates unique constraint "t_pkey"');
    expect(duplicate.detail).toBe('Key (id)=(1) already exists.');
    expect(await text(db, 'select count(*) from t where id = 10')).toEqual([['0']]);
    const notNull = await failure(run(db, "insert into t (v) values ('x')"));
    expect(notNull.code).toBe('23502');
    expect(notNull.message).toBe('null value in column "id" of relation "t" violates not-null constraint');
    expect(notNull.detail).toBe('Failing row contains (null, x, null).');
    expect((await failure(run(db, 'update t set id = 1 where id = 2'))).code).toBe('23505');
    expect(await text(db, 'select id from t order by id')).toEqual([['1'], ['2'], ['3'], ['4']]);
    expect((await failure(run(db, "insert into t values ('abc', 'x', 1)"))).code).toBe('22P02');
  });
});

describe('bind errors', () => {
  it('reports unknown names, ambiguity and type errors with positions', async () => {
    const db = await seeded();
    const noTable = await failure(() => plan(db, 'select * from nope'));
    expect([noTable.code, noTable.message, noTable.position]).toEqual(['42P01', 'relation "nope" does not exist', 15]);
    const noColumn = await failure(() => plan(db, 'select zz from t'));
    expect([noColumn.code, noColumn.message, noColumn.position]).toEqual(['42703', 'column "zz" does not exist', 8]);
    expect((await failure(() => plan(db, 'select id from t, u'))).code).toBe('42702');
    const operator = await failure(() => plan(db, 'select id + v from t'));
    expect([operator.code, operator.message, operator.position]).toEqual(['42883', 'operator does not exist: integer + text', 11]);
    expect((await failure(() => plan(db, 'select * from t where n'))).code).toBe('42804');
    expect((await failure(() => plan(db, 'select nosuch(1)'))).code).toBe('42883');
  });

  it('a pathologically deep statement is 54001, not a crash', async () => {
    const db = await seeded();
    const deep = `select ${'('.repeat(20000)}1${')'.repeat(20000)}`;
    let code: string | undefined;
    try {
      plan(db, deep);
    } catch (error) {
      code = (error as SqlError).code;
    }
    // The parser may refuse it first (its own limit); either way a SqlError with a code.
    expect(['54001', '42601']).toContain(code);
  });

  it('division by zero is an execution error, not a plan-time one', async () => {
    const db = await seeded();
    expect(await text(db, 'select case when false then 1 / 0 else 2 end')).toEqual([['2']]);
    expect((await failure(run(db, 'select 1 / (id - 1) from t'))).code).toBe('22012');
  });

  it('stops at the statement deadline inside synchronous work with 57014', async () => {
    const db = await seeded();
    const planned = plan(db, 'select count(*) from generate_series(1, 100000000)');
    const error = await failure(executePlanned(planned, { tables: db, parameters: [], evalContext: DEFAULT_EVAL_CONTEXT, signal: new AbortController().signal, deadlineMillis: Date.now() + 50 }));
    expect([error.code, error.message]).toEqual(['57014', 'canceling statement due to statement timeout']);
  });

  it('cancels between batches with 57014', async () => {
    const db = await seeded();
    const controller = new AbortController();
    controller.abort();
    const error = await failure(executePlanned(plan(db, 'select * from t'), { tables: db, parameters: [], evalContext: DEFAULT_EVAL_CONTEXT, signal: controller.signal }));
    expect([error.code, error.message]).toEqual(['57014', 'canceling statement due to user request']);
  });
});

describe('time travel', () => {
  it('reads AS OF a timestamp, unix seconds, and every version BETWEEN two moments', async () => {
    const db = database();
    db.epoch = epochFromMillis(1_000_000_000); // 1970-01-12 13:46:40 UTC
    await run(db, "insert into u values (1, 'first')");
    db.epoch = epochFromMillis(2_000_000_000); // 1970-01-24 03:33:20 UTC
    await run(db, "update u set w = 'second' where id = 1");
    expect(await text(db, 'select w from u')).toEqual([['second']]);
    expect(await text(db, "select w from u for system_time as of '1970-01-20 00:00:00+00'")).toEqual([['first']]);
    expect(await text(db, 'select w from u for system_time as of 1500000')).toEqual([['first']]);
    expect(await text(db, 'select w from u for system_time as of 100')).toEqual([]);
    // now() is the statement time the harness sets (2023-11-14 22:13:20 UTC): the latest version.
    expect(await text(db, "select w from u for system_time as of now() - interval '5 minutes'")).toEqual([['second']]);
    expect(await text(db, "select w from u for system_time as of '1970-01-20 00:00:00'::timestamp")).toEqual([['first']]);
    expect(await text(db, 'select w from u for system_time as of $1', [1_500_000_000_000])).toEqual([['first']]);
    expect(await text(db, "select w, oxbow_valid_from, oxbow_valid_to from u for system_time between '1970-01-01 00:00:00+00' and '1970-02-01 00:00:00+00' order by oxbow_valid_from")).toEqual([
      ['first', '1970-01-12 13:46:40+00', '1970-01-24 03:33:20+00'],
      ['second', '1970-01-24 03:33:20+00', null],
    ]);
    db.oldestEpoch = epochFromMillis(1_500_000_000);
    expect((await failure(run(db, 'select w from u for system_time as of 1000000'))).code).toBe('72000');
  });
});
