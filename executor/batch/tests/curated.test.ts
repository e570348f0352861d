// Hand-picked queries over fixed tables, each run on oxbow's planner + batch executor and on a real
// PostgreSQL 15: results (text, in order when the query orders them, else as multisets), output
// column names and SQLSTATEs of errors must match. Complements the random differential test with
// the features its grammar does not generate.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../../../test/support/postgres.js';
import { type as scalar } from '../../../sql/types.js';
import { SqlError } from '../../../sql/errors.js';
import { MemoryDatabase } from './memory-tables.js';
import { ready, run, text } from './harness.js';

const SETUP = [
  'CREATE TABLE emp (id int PRIMARY KEY, name text, dept int, salary numeric, boss int, hired date)',
  `INSERT INTO emp VALUES (1, 'ann', 10, 500, NULL, '2020-01-15'), (2, 'bob', 10, 300, 1, '2021-03-01'), (3, 'cat', 20, 300, 1, '2019-07-30'),
    (4, 'dan', 20, NULL, 3, '2022-11-11'), (5, 'eve', NULL, 120.5, 3, '2023-02-28'), (6, 'fay', 30, 250, 1, NULL)`,
  'CREATE TABLE dept (id int PRIMARY KEY, title text, budget bigint)',
  "INSERT INTO dept VALUES (10, 'eng', 1000000), (20, 'ops', 250000), (40, 'empty', 0)",
];

const QUERIES = [
  'select * from emp order by id',
  'select name, salary * 2 as double_pay, salary / 3 from emp order by id',
  'select dept, count(*), count(salary), sum(salary), avg(salary), min(name), max(hired) from emp group by dept order by dept nulls first',
  'select count(*), sum(id), avg(id), sum(dept), avg(dept) from emp',
  'select dept, string_agg(name, \'/\' order by name desc) from emp group by dept order by 1',
  'select dept, array_agg(id order by id) filter (where salary > 200) from emp group by dept order by 1',
  'select e.name, d.title from emp e join dept d on e.dept = d.id order by e.id',
  'select e.name, d.title from emp e left join dept d on e.dept = d.id order by e.id',
  'select e.name, d.title from emp e right join dept d on e.dept = d.id order by d.id, e.id',
  'select e.name, d.title from emp e full join dept d on e.dept = d.id order by d.id nulls first, e.id nulls first',
  'select b.name as boss, count(*) from emp e join emp b on e.boss = b.id group by b.name order by 1',
  'select name from emp where dept in (select id from dept where budget > 100000) order by 1',
  'select name from emp where dept not in (select id from dept) order by 1',
  'select name from emp e where exists (select 1 from emp r where r.boss = e.id) order by 1',
  'select name from emp e where not exists (select 1 from emp r where r.boss = e.id) order by 1',
  'select name, (select title from dept d where d.id = e.dept) from emp e order by id',
  'select name, salary > (select avg(salary) from emp) from emp order by id',
  'select dept, name, rank() over (partition by dept order by salary desc nulls last) from emp order by dept, 3, name',
  'select name, sum(salary) over (order by id rows between unbounded preceding and current row) from emp order by id',
  'select name, avg(salary) over (partition by dept) from emp order by id',
  'select name, lag(name, 1, \'-\') over (order by hired nulls first), lead(id) over (order by id) from emp order by id',
  'select name, ntile(3) over (order by id), percent_rank() over (order by id), cume_dist() over (order by dept) from emp order by id',
  'select distinct dept from emp order by 1',
  'select distinct on (dept) dept, name from emp order by dept, salary desc nulls last',
  'select dept from emp union select id from dept order by 1',
  'select dept from emp intersect all select id from dept order by 1',
  'select dept from emp except select id from dept order by 1',
  'with recursive chain as (select id, name, 0 as depth from emp where boss is null union all select e.id, e.name, c.depth + 1 from emp e join chain c on e.boss = c.id) select * from chain order by id',
  'with t as (select dept, count(*) as n from emp group by dept) select * from t where n > 1 order by dept',
  'select name, case when salary >= 300 then \'high\' when salary is null then \'unknown\' else \'low\' end from emp order by id',
  'select coalesce(salary, 0), nullif(dept, 10), greatest(id, dept), least(id, dept) from emp order by id',
  'select id from emp where salary between 200 and 400 order by 1',
  'select id from emp where name like \'%a%\' order by 1',
  'select id from emp where hired > \'2021-01-01\' order by 1',
  'select id, hired + 30 from emp order by id',
  'select id from emp order by salary desc nulls last, id limit 3 offset 1',
  'select id from emp order by id fetch first 2 rows only',
  'select * from generate_series(1, 10, 4)',
  'select x, y from generate_series(1, 2) x, lateral generate_series(x, 3) y order by 1, 2',
  'select * from unnest(array[3, 1, 2]) with ordinality',
  'select d.title, e.name from dept d left join lateral (select name from emp where emp.dept = d.id order by salary desc nulls last limit 1) e on true order by d.id',
  'select id, name from emp natural join (select 10 as dept) x order by id',
  'select e.id, x.title from emp e join dept x using (id) order by 1',
  'select dept, count(*) from emp group by dept having count(*) > 1 order by 1',
  'select dept, sum(salary) from emp group by 1 having sum(salary) > 300 order by 2',
  'select count(distinct dept), count(distinct salary) from emp',
  'select bool_and(salary > 100), bool_or(salary > 400), every(id > 0) from emp',
  'select 1 + 2 * 3, 7 / 2, 7 % 3, -5 / 2, 2 ^ 10',
  'select 1::numeric / 3, 10::numeric / 4, round(2.5), 5.0 / 2',
  "select 'a' || 1, 1 || 'b', upper('x') || lower('Y')",
  'select null = null, null is null, 1 is distinct from null, true and null, false and null, true or null',
  'select id, -id, abs(-id), id::text || \'!\' from emp order by id',
  "select '2024-02-29'::date + 1, '2024-01-01'::timestamp + interval '1 day 2 hours'",
  'select 10 / 0',
  'select 2147483647 + 1',
  "select 'x'::int",
  'select nosuch from emp',
  'select name from emp group by dept',
  'select * from emp e1 join emp e2 on id = id',
  'select max(count(*)) from emp',
  'select (select id from emp)',
  'select id from emp order by 9',
  'select dept, sum(salary) over (order by dept) from emp order by id',
  'select dept, count(*) over (order by dept range between current row and unbounded following) from emp order by id',
  'select distinct salary from emp order by 1 nulls first',
  'select salary from emp union select null order by 1',
  'select name from emp order by length(name) desc, salary nulls first, id',
  'select dept * 2, count(*) from emp group by dept * 2 order by 1',
  'select count(*) from emp having count(*) > 3',
  'select sum(salary), max(name), count(*) from emp where id > 100',
  'select * from (values (1, 2.5), (2, 3)) v(a, b) order by a',
  'select 1 union select 2.5 order by 1',
  'select case when id > 3 then id else 0.5 end from emp order by id',
  'select e.id from emp e join dept d on e.dept = d.budget / 100000 order by 1',
  "select id from emp where name = 'ann'::varchar",
  'select dept, (select count(*) from emp i where i.dept = o.dept) from emp o group by dept order by 1',
  'select e.name from emp e where e.salary = (select max(salary) from emp x where x.dept = e.dept) order by 1',
  'select name from emp where salary > any (select salary from emp where dept = 20) order by 1',
  'select name from emp where salary >= all (select salary from emp where dept = 10) order by 1',
  'select name from emp where id = any(array[1, 3, 5]) order by 1',
  "select extract(year from hired), date_trunc('month', hired::timestamp) from emp where hired is not null order by id",
  'select count(*) filter (where dept = 10), count(*) filter (where dept is null) from emp',
  'select name, row_number() over w, sum(id) over w from emp window w as (partition by dept order by id) order by id',
  'select id, first_value(name) over (partition by dept order by id desc), last_value(name) over (partition by dept order by id) from emp order by id',
  'select x from generate_series(5, 1, -2) x',
  "select g from generate_series('2024-01-01'::timestamp, '2024-01-03', '1 day') g",
  'select a, b from (select 1 as a, 2 as b) s where a < b',
  'select t.* from (select id, name from emp) t where t.id < 3 order by 1',
  'select id, exists (select 1 from dept where dept.id = emp.dept) from emp order by 1',
  'select * from emp where false',
  'select * from emp e cross join dept d where e.id = 1 order by d.id',
  "select 'a' union select 'b' order by 1",
  "select 1, 'x' union all select 2, null order by 1",
  'select null union select null',
  'select id, sum(id) over (order by salary range between 100 preceding and current row) from emp order by id',
  'select id, count(*) over (order by salary desc range between 50 preceding and 50 following) from emp order by id',
  "select id, count(*) over (order by hired::timestamp range between interval '400 days' preceding and current row) from emp order by id",
  'select id, first_value(id) over (order by dept range between 10 preceding and 10 following) from emp order by id',
  "select hired from emp where id < 3 union select '2024-01-01' order by 1",
];

let postgres: PostgresServer;
let db: MemoryDatabase;

beforeAll(async () => {
  await ready();
  postgres = await startPostgres();
  for (const statement of SETUP) await postgres.query(statement);
  db = new MemoryDatabase();
  const n = scalar('numeric');
  db.createTable('emp', [
    { name: 'id', type: scalar('int4'), nullable: false }, { name: 'name', type: scalar('text') }, { name: 'dept', type: scalar('int4') },
    { name: 'salary', type: n }, { name: 'boss', type: scalar('int4') }, { name: 'hired', type: scalar('date') },
  ], ['id']);
  db.createTable('dept', [{ name: 'id', type: scalar('int4'), nullable: false }, { name: 'title', type: scalar('text') }, { name: 'budget', type: scalar('int8') }], ['id']);
  for (const statement of SETUP.filter((s) => s.startsWith('INSERT'))) await run(db, statement);
});

afterAll(async () => {
  await postgres?.stop();
});

type Outcome = { ok: true; columns: string[]; rows: string[] } | { ok: false; code: string };

function ordered(sql: string): boolean {
  return /order by/i.test(sql.replace(/\([^()]*order by[^()]*\)/gi, ''));
}

describe('curated queries: oxbow vs PostgreSQL 15', () => {
  it('agrees on every query', async () => {
    const mismatches: string[] = [];
    for (const sql of QUERIES) {
      const theirs = await postgres.tryQuery(sql);
      let expected: Outcome = theirs.ok ? { ok: true, columns: theirs.columns, rows: theirs.rows.map((r) => JSON.stringify(r)) } : { ok: false, code: theirs.code };
      let actual: Outcome;
      try {
        const result = await run(db, sql);
        const rows = await text(db, sql);
        actual = { ok: true, columns: (result.planned.columns ?? []).map((c) => c.name), rows: rows.map((r) => JSON.stringify(r)) };
      } catch (error) {
        if (!(error instanceof SqlError)) throw error;
        actual = { ok: false, code: error.code };
      }
      if (expected.ok && actual.ok && !ordered(sql)) {
        expected = { ...expected, rows: [...expected.rows].sort() };
        actual = { ...actual, rows: [...actual.rows].sort() };
      }
      if (process.env.CURATED_DEBUG) console.log(sql, JSON.stringify(expected).slice(0, 150), JSON.stringify(actual).slice(0, 150));
      if (JSON.stringify(expected) !== JSON.stringify(actual)) mismatches.push(`${sql}\n  postgres: ${JSON.stringify(expected)}\n  oxbow:    ${JSON.stringify(actual)}`);
    }
    expect(mismatches).toEqual([]);
  });
});
