// Durability of the catalog and of table rows across a restart, on the real RocksDB store: every
// object created before closing the engine is there after reopening the same directory, with its
// columns, key, comment and index, and ids are never reused.
import { describe, expect, it } from 'vitest';
import { openOnDataDir, runRows as run, temporaryDataDir } from './data-dir-engine.js';

const dataDir = temporaryDataDir('oxbow-restart-');

const open = () => openOnDataDir(dataDir, 10_000);

describe('restart', () => {
  it('keeps every object and row', async () => {
    const first = await open();
    await run(
      first.session,
      `create schema s;
       create table s.t (id int primary key, v varchar(5) not null default 'd');
       create table plain (a bigint, b text);
       create index plain_b on plain (b);
       comment on table s.t is 'kept';
       insert into s.t values (1, 'one'), (2, 'two');
       insert into plain values (10, 'x');
       create table gone (a int);
       drop table gone`,
    );
    await first.engine.close();

    const second = await open();
    expect(await run(second.session, 'select * from s.t order by id')).toEqual([
      [1, 'one'],
      [2, 'two'],
    ]);
    expect(await run(second.session, 'select * from plain')).toEqual([[10n, 'x']]);
    await run(second.session, 'insert into s.t (id) values (3)');
    expect(await run(second.session, 'select v from s.t where id = 3')).toEqual([['d']]);
    const relations = await run(
      second.session,
      "select c.relname, c.relkind, d.description from pg_catalog.pg_class c left join pg_catalog.pg_description d on d.objoid = c.oid where c.oid >= 16384 order by c.oid",
    );
    expect(relations).toEqual([
      ['t', 'r', 'kept'],
      ['t_pkey', 'i', null],
      ['plain', 'r', null],
      ['plain_b', 'i', null],
    ]);
    const schemas = await run(second.session, "select nspname from pg_catalog.pg_namespace where nspname = 's'");
    expect(schemas).toEqual([['s']]);
    expect((await run(second.session, 'select * from gone').catch((error: { code: string }) => error.code))).toBe('42P01');
    // A new object gets an id above every id used before, including the dropped table's.
    await run(second.session, 'create table fresh (a int)');
    const ids = await run(second.session, "select relname, oid from pg_catalog.pg_class where relname in ('gone', 'fresh', 'plain_b')");
    const byName = new Map(ids.map((row) => [row[0], Number(row[1])]));
    expect(byName.get('fresh')!).toBeGreaterThan(byName.get('plain_b')! + 1);
    await run(second.session, 'drop schema public cascade');
    await second.engine.close();

    const third = await open();
    expect(await run(third.session, "select nspname from pg_catalog.pg_namespace order by nspname")).toEqual([
      ['information_schema'],
      ['oxbow_catalog'],
      ['pg_catalog'],
      ['s'],
    ]);
    await third.engine.close();
  });
});
