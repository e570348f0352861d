import { afterEach, beforeEach, expect, it } from 'vitest';
import { openHarness, type Harness } from './stream-harness.js';

let h: Harness;
beforeEach(async () => {
  h = await openHarness();
});
afterEach(async () => h.close());

it('smoke', async () => {
  await h.run('create table t (k int primary key, g int, v int)');
  await h.run('insert into t values (1, 1, 10), (2, 1, 20), (3, 2, 5)');
  await h.run('create materialized view mv as select g, count(*) as n, sum(v) as s from t group by g');
  expect(await h.lines('select * from mv')).toEqual(['1 | 2 | 30', '2 | 1 | 5']);
  await h.run('insert into t values (4, 2, 7)');
  await h.run('update t set v = 100 where k = 1');
  await h.run('delete from t where k = 2');
  expect(await h.lines('select * from mv')).toEqual(['1 | 1 | 100', '2 | 2 | 12']);
  console.log((await h.run('explain create materialized view mv2 as select g, count(*) from t group by g')).rows.map((r) => r[0]).join('\n'));
});
