// Sequences, serial and identity columns, UNIQUE constraints against the real PostgreSQL 15: the
// same statements on both servers, the same rows (as text) or the same SQLSTATE and message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { startPgPair, type PgPair } from '../support/pg-pair.js';

let pair: PgPair;
beforeAll(async () => {
  pair = await startPgPair();
}, 120_000);
afterAll(async () => {
  await pair?.stop();
});

type Outcome = { rows: unknown[][] } | { code: string; message: string; detail?: string };

async function run(client: pg.Client, sql: string): Promise<Outcome> {
  try {
    const result = await client.query({ text: sql, rowMode: 'array' });
    return { rows: result.rows as unknown[][] };
  } catch (error) {
    const e = error as { code: string; message: string; detail?: string };
    return { code: e.code, message: e.message, ...(e.detail === undefined ? {} : { detail: e.detail }) };
  }
}

async function differences(statements: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const sql of statements) {
    const [expected, actual] = [await run(pair.onPostgres, sql), await run(pair.onOxbow, sql)];
    if (JSON.stringify(expected) !== JSON.stringify(actual)) found.push(`${sql}\n  postgres: ${JSON.stringify(expected)}\n  oxbow:    ${JSON.stringify(actual)}`);
  }
  return found;
}

describe('sequences match PostgreSQL 15', () => {
  it('CREATE / ALTER / DROP SEQUENCE and nextval, currval, lastval, setval', async () => {
    expect(
      await differences([
        'SELECT lastval()',
        'CREATE SEQUENCE s1',
        'CREATE SEQUENCE s1',
        'CREATE SEQUENCE IF NOT EXISTS s1',
        "SELECT currval('s1')",
        "SELECT nextval('s1'), nextval('s1')",
        "SELECT currval('s1'), lastval()",
        "SELECT nextval('nope')",
        'CREATE TABLE plain (a int)',
        "SELECT nextval('plain')",
        'CREATE SEQUENCE s2 AS smallint INCREMENT BY 10 START 32700',
        "SELECT nextval('s2'), nextval('s2')",
        "SELECT nextval('s2')",
        'CREATE SEQUENCE s3 INCREMENT -1 MINVALUE -3 MAXVALUE -1',
        "SELECT nextval('s3'), nextval('s3'), nextval('s3')",
        "SELECT nextval('s3')",
        'CREATE SEQUENCE s4 MINVALUE 1 MAXVALUE 3 CYCLE',
        "SELECT nextval('s4'), nextval('s4'), nextval('s4'), nextval('s4')",
        "SELECT setval('s4', 2), nextval('s4')",
        "SELECT setval('s4', 2, false), nextval('s4')",
        "SELECT setval('s4', 9)",
        'ALTER SEQUENCE s1 RESTART WITH 100',
        "SELECT nextval('s1')",
        'ALTER SEQUENCE s1 INCREMENT BY 5',
        "SELECT nextval('s1')",
        'ALTER SEQUENCE s1 RESTART',
        "SELECT nextval('s1')",
        'CREATE SEQUENCE bad INCREMENT 0',
        'CREATE SEQUENCE bad AS text',
        'CREATE SEQUENCE bad MINVALUE 5 MAXVALUE 1',
        'CREATE SEQUENCE bad START 0',
        'CREATE SEQUENCE bad AS smallint MAXVALUE 100000',
        'CREATE SEQUENCE bad CACHE 0',
        'ALTER SEQUENCE s1 RESTART WITH 0',
        'ALTER SEQUENCE nope RESTART',
        'ALTER SEQUENCE plain RESTART',
        'DROP SEQUENCE s2, s3',
        'DROP SEQUENCE s2',
        'DROP SEQUENCE IF EXISTS s2',
        'DROP SEQUENCE plain',
        "SELECT relname, relkind FROM pg_class WHERE relname LIKE 's_' ORDER BY relname",
        'SELECT sequencename, data_type::text, start_value, min_value, max_value, increment_by, cycle, cache_size, last_value FROM pg_sequences ORDER BY sequencename',
        "SELECT seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle FROM pg_sequence WHERE seqrelid = 's4'::regclass",
        'SELECT sequence_name, data_type, numeric_precision, start_value, minimum_value, maximum_value, increment, cycle_option FROM information_schema.sequences ORDER BY sequence_name',
      ]),
    ).toEqual([]);
  });

  it('nextval is volatile: one value per row, kept by a rolled-back block', async () => {
    expect(
      await differences([
        'CREATE SEQUENCE v1',
        'CREATE TABLE vt (a bigint)',
        "INSERT INTO vt SELECT nextval('v1') FROM generate_series(1, 5)",
        'SELECT a FROM vt ORDER BY a',
        'BEGIN',
        "SELECT nextval('v1')",
        'ROLLBACK',
        "SELECT nextval('v1')",
      ]),
    ).toEqual([]);
  });

  it('reads a sequence as a relation: last_value and is_called, as pg_dump does', async () => {
    const states = async (client: pg.Client) => {
      await client.query('CREATE SEQUENCE rel_s START 7');
      const seen: unknown[] = [await run(client, 'SELECT last_value, is_called FROM rel_s')];
      await client.query("SELECT nextval('rel_s')");
      await client.query("SELECT nextval('rel_s')");
      seen.push(await run(client, 'SELECT s.last_value, s.is_called FROM public.rel_s s'));
      return seen;
    };
    const expected = await states(pair.onPostgres);
    expect(expected).toEqual([{ rows: [['7', 'f']] }, { rows: [['8', 't']] }]);
    expect(await states(pair.onOxbow)).toEqual(expected);
  });

  it('refuses sequences in materialized views (0A000, oxbow only)', async () => {
    await pair.onOxbow.query('CREATE SEQUENCE mvs');
    for (const sql of ["CREATE MATERIALIZED VIEW mv1 AS SELECT nextval('mvs') AS v", "CREATE MATERIALIZED VIEW mv2 AS SELECT g, currval('mvs') FROM generate_series(1, 3) g"]) {
      const outcome = await run(pair.onOxbow, sql);
      expect(outcome).toMatchObject({ code: '0A000' });
    }
    expect(await run(pair.onOxbow, "SELECT nextval('mvs')")).toEqual({ rows: [['1']] });
  });

  it('nextval over the extended protocol: a parameter names the sequence, each execution a new value', async () => {
    for (const client of [pair.onPostgres, pair.onOxbow]) await client.query('CREATE SEQUENCE ext_s START 5');
    const values = async (client: pg.Client) => {
      const seen: unknown[] = [];
      for (let i = 0; i < 3; i++) seen.push((await client.query({ name: 'next_ext', text: 'SELECT nextval($1) AS v', values: ['ext_s'], rowMode: 'array' })).rows);
      seen.push((await client.query({ text: "SELECT currval('ext_s'), lastval()", rowMode: 'array' })).rows);
      seen.push(await run(client, "SELECT nextval('ext_nope')"));
      return seen;
    };
    expect(await values(pair.onOxbow)).toEqual(await values(pair.onPostgres));
  });

  it('serial, bigserial, smallserial and identity columns', async () => {
    expect(
      await differences([
        'CREATE TABLE st (id serial PRIMARY KEY, b bigserial, c smallserial, v text)',
        "INSERT INTO st (v) VALUES ('a'), ('b')",
        "INSERT INTO st (id, v) VALUES (10, 'c')",
        'SELECT * FROM st ORDER BY id',
        "SELECT pg_get_serial_sequence('st', 'id'), pg_get_serial_sequence('st', 'v')",
        "SELECT pg_get_serial_sequence('nope', 'id')",
        "SELECT column_name, column_default, is_nullable FROM information_schema.columns WHERE table_name = 'st' ORDER BY ordinal_position",
        "SELECT relname FROM pg_class WHERE relkind = 'S' AND relname LIKE 'st%' ORDER BY relname",
        'CREATE TABLE it (id int GENERATED ALWAYS AS IDENTITY, d bigint GENERATED BY DEFAULT AS IDENTITY (START WITH 100 INCREMENT BY 10), v text)',
        "INSERT INTO it (v) VALUES ('x'), ('y')",
        "INSERT INTO it (id, v) VALUES (7, 'z')",
        "INSERT INTO it (id, v) OVERRIDING SYSTEM VALUE VALUES (7, 'z')",
        "INSERT INTO it (d, v) VALUES (5, 'w')",
        "INSERT INTO it (id, d, v) OVERRIDING USER VALUE VALUES (1, 1, 'u')",
        "INSERT INTO it (id, v) VALUES (DEFAULT, 'q')",
        'UPDATE it SET id = 3',
        'UPDATE it SET id = DEFAULT WHERE v = \'q\'',
        'SELECT * FROM it ORDER BY v',
        "SELECT attname, attidentity FROM pg_attribute WHERE attrelid = 'it'::regclass AND attnum > 0 ORDER BY attnum",
        "SELECT pg_get_serial_sequence('it', 'd')",
        "SELECT column_name, is_identity, identity_generation FROM information_schema.columns WHERE table_name = 'it' ORDER BY ordinal_position",
        'CREATE TABLE bad1 (a text GENERATED ALWAYS AS IDENTITY)',
        'CREATE TABLE bad2 (a int DEFAULT 1 GENERATED ALWAYS AS IDENTITY)',
        'DROP TABLE st, it',
        "SELECT relname FROM pg_class WHERE relkind = 'S' AND (relname LIKE 'st%' OR relname LIKE 'it%')",
      ]),
    ).toEqual([]);
  });

  it('UNIQUE constraints: named indexes that refuse duplicates, NULLs never collide', async () => {
    expect(
      await differences([
        'CREATE TABLE u (a int UNIQUE, b int, c text, UNIQUE (b, c))',
        'INSERT INTO u VALUES (1, 1, \'x\'), (NULL, NULL, NULL), (NULL, NULL, NULL)',
        'INSERT INTO u VALUES (1, 2, \'y\')',
        'INSERT INTO u VALUES (2, 1, \'x\')',
        'INSERT INTO u VALUES (2, 1, \'z\')',
        'UPDATE u SET a = 1 WHERE a = 2',
        'SELECT a, b, c FROM u ORDER BY a NULLS LAST, b, c',
        "SELECT c.relname, i.indisunique FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'u'::regclass ORDER BY 1",
        "SELECT conname, contype, conkey FROM pg_constraint WHERE conrelid = 'u'::regclass ORDER BY conname",
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'u'::regclass ORDER BY conname",
        'DROP INDEX u_a_key',
        'CREATE TABLE u2 (a int CONSTRAINT my_unique UNIQUE)',
        'INSERT INTO u2 VALUES (1), (1)',
      ]),
    ).toEqual([]);
  });

  it('FOREIGN KEY constraints are enforced', async () => {
    expect(
      await differences([
        'CREATE TABLE fp (id int PRIMARY KEY, code text UNIQUE)',
        'CREATE TABLE fc (id serial PRIMARY KEY, pid int REFERENCES fp ON DELETE CASCADE, code text REFERENCES fp (code), note text)',
        'CREATE TABLE fn (id int PRIMARY KEY, pid int REFERENCES fp ON DELETE SET NULL)',
        'CREATE TABLE fr (id int PRIMARY KEY, code text REFERENCES fp (code) ON DELETE RESTRICT)',
        "INSERT INTO fp VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "INSERT INTO fc (pid, code) VALUES (1, 'a'), (1, 'b'), (2, NULL), (NULL, 'c')",
        'INSERT INTO fc (pid) VALUES (9)',
        "INSERT INTO fc (code) VALUES ('zz')",
        'UPDATE fc SET pid = 7 WHERE pid = 2',
        'INSERT INTO fn VALUES (1, 1), (2, 2), (3, NULL)',
        "INSERT INTO fr VALUES (1, 'c')",
        'DELETE FROM fp WHERE id = 3',
        "UPDATE fp SET code = 'cc' WHERE id = 3",
        'UPDATE fp SET id = 10 WHERE id = 2',
        'DELETE FROM fc WHERE pid = 2',
        'DELETE FROM fp WHERE id = 1',
        'SELECT pid, code FROM fc ORDER BY id',
        'SELECT id, pid FROM fn ORDER BY id',
        "INSERT INTO fp VALUES (4, 'd'); INSERT INTO fc (pid) VALUES (4)",
        'DROP TABLE fp',
        'SELECT pid FROM fc ORDER BY id',
        // Many parent keys at once: one pass over an unindexed child (int and text keys).
        'CREATE TABLE mp (id int PRIMARY KEY, tag text UNIQUE)',
        'CREATE TABLE mc (id int PRIMARY KEY, pid int REFERENCES mp ON DELETE CASCADE, tag text REFERENCES mp (tag))',
        "INSERT INTO mp SELECT g, 't' || g FROM generate_series(1, 50) g",
        "INSERT INTO mc SELECT g, g % 10 + 1, CASE WHEN g % 7 = 0 THEN 't' || (g % 5 + 20) END FROM generate_series(1, 200) g",
        'DELETE FROM mp WHERE id > 20',
        'DELETE FROM mp WHERE id <= 5',
        'SELECT count(*), min(pid), max(pid) FROM mc',
        'DELETE FROM mp WHERE id BETWEEN 6 AND 10',
        'SELECT count(*) FROM mc',
      ]),
    ).toEqual([]);
  });

  it('ALTER TABLE ADD CONSTRAINT UNIQUE / FOREIGN KEY checks the rows there', async () => {
    expect(
      await differences([
        'CREATE TABLE ap (id int PRIMARY KEY, k int)',
        'CREATE TABLE ac (id int PRIMARY KEY, pid int, k int)',
        'INSERT INTO ap VALUES (1, 1), (2, 1), (3, NULL), (4, NULL)',
        'INSERT INTO ac VALUES (1, 1, 1), (2, 5, 2), (3, NULL, 3)',
        'ALTER TABLE ap ADD CONSTRAINT ap_k_unique UNIQUE (k)',
        'UPDATE ap SET k = 2 WHERE id = 2',
        'ALTER TABLE ap ADD UNIQUE (k)',
        'ALTER TABLE ap ADD CONSTRAINT ap_k_key UNIQUE (k)',
        'INSERT INTO ap VALUES (5, 2)',
        'ALTER TABLE ac ADD FOREIGN KEY (pid) REFERENCES ap',
        'DELETE FROM ac WHERE id = 2',
        'ALTER TABLE ac ADD FOREIGN KEY (pid) REFERENCES ap',
        'ALTER TABLE ac ADD CONSTRAINT ac_k_fkey FOREIGN KEY (k) REFERENCES ap (k)',
        'ALTER TABLE ac ADD FOREIGN KEY (k) REFERENCES ap (k)',
        'INSERT INTO ac VALUES (4, 9, NULL)',
        'DELETE FROM ap WHERE id = 1',
        "SELECT conname, contype, conkey, confkey FROM pg_constraint WHERE conrelid IN ('ap'::regclass, 'ac'::regclass) ORDER BY conname",
      ]),
    ).toEqual([]);
  });

  it("what pg_dump and Django emit: a serial column's parts one by one, deferrable foreign keys", async () => {
    expect(
      await differences([
        'CREATE TABLE public.dump_t (id integer NOT NULL, name text)',
        'CREATE SEQUENCE public.dump_t_id_seq AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1',
        'ALTER SEQUENCE public.dump_t_id_seq OWNED BY public.dump_t.id',
        "ALTER TABLE ONLY public.dump_t ALTER COLUMN id SET DEFAULT nextval('public.dump_t_id_seq'::regclass)",
        "INSERT INTO dump_t (id, name) VALUES (1, 'a'), (2, 'b')",
        "SELECT pg_catalog.setval('public.dump_t_id_seq', 2, true)",
        "INSERT INTO dump_t (name) VALUES ('c') RETURNING id",
        "SELECT pg_get_serial_sequence('dump_t', 'id'), column_default FROM information_schema.columns WHERE table_name = 'dump_t' AND column_name = 'id'",
        'ALTER TABLE dump_t ALTER COLUMN id DROP DEFAULT',
        "SELECT column_default FROM information_schema.columns WHERE table_name = 'dump_t' AND column_name = 'id'",
        'ALTER TABLE dump_t ALTER COLUMN nope SET DEFAULT 1',
        'DROP TABLE dump_t',
        "SELECT count(*) FROM pg_class WHERE relname = 'dump_t_id_seq'",
        'CREATE TABLE public.dump_i (id bigint NOT NULL, kind text, n int)',
        'ALTER TABLE public.dump_i ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME public.dump_i_id_seq START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1)',
        'ALTER TABLE dump_i ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY',
        'ALTER TABLE dump_i ALTER COLUMN n ADD GENERATED ALWAYS AS IDENTITY',
        "SELECT pg_catalog.setval('public.dump_i_id_seq', 7, true)",
        "INSERT INTO dump_i (kind) VALUES ('a') RETURNING id",
        "INSERT INTO dump_i (id, kind) VALUES (1, 'b')",
        "SELECT attidentity, pg_get_serial_sequence('dump_i', 'id') FROM pg_attribute WHERE attrelid = 'dump_i'::regclass AND attname = 'id'",
        'CREATE TABLE named_i (id int GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME my_own_seq START 3))',
        'INSERT INTO named_i DEFAULT VALUES RETURNING id',
        "SELECT pg_get_serial_sequence('named_i', 'id')",
        'DROP TABLE dump_i, named_i',
        'CREATE TABLE add_s (v text)',
        "INSERT INTO add_s VALUES ('a')",
        "INSERT INTO add_s VALUES ('b')",
        "INSERT INTO add_s VALUES ('c')",
        'ALTER TABLE add_s ADD COLUMN id bigserial',
        "INSERT INTO add_s (v) VALUES ('d')",
        'SELECT v, id FROM add_s ORDER BY id',
        "SELECT pg_get_serial_sequence('add_s', 'id')",
        'SELECT 1::serial',
        'CREATE TABLE owner_t (id serial)',
        "CREATE TABLE borrower (n int DEFAULT nextval('owner_t_id_seq'))",
        'DROP TABLE owner_t',
        'DROP TABLE owner_t CASCADE',
        'INSERT INTO borrower DEFAULT VALUES',
        'SELECT n FROM borrower',
        'CREATE TABLE "dj_author" ("id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, "name" varchar(100) NOT NULL)',
        'CREATE TABLE "dj_book" ("id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, "author_id" bigint NOT NULL)',
        'ALTER TABLE "dj_book" ADD CONSTRAINT "dj_book_author_id_fk" FOREIGN KEY ("author_id") REFERENCES "dj_author" ("id") DEFERRABLE INITIALLY DEFERRED',
        "INSERT INTO dj_author (name) VALUES ('x') RETURNING id",
        'INSERT INTO dj_book (author_id) VALUES (1) RETURNING id',
        "SELECT conname, condeferrable, condeferred, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'dj_book'::regclass AND contype = 'f'",
      ]),
    ).toEqual([]);
  });

  it('FOREIGN KEY constraints are in pg_constraint', async () => {
    expect(
      await differences([
        'CREATE TABLE parent (id int PRIMARY KEY, code text UNIQUE)',
        'CREATE TABLE child (id int, pid int REFERENCES parent, code text, FOREIGN KEY (code) REFERENCES parent (code) ON DELETE CASCADE)',
        "SELECT conname, contype, conkey, confkey, confrelid::regclass::text, confdeltype, confupdtype, confmatchtype FROM pg_constraint WHERE conrelid = 'child'::regclass ORDER BY conname",
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'child'::regclass ORDER BY conname",
        'CREATE TABLE child2 (pid int REFERENCES nope)',
        'CREATE TABLE child2 (pid int REFERENCES parent (nope))',
        'CREATE TABLE child2 (pid int REFERENCES child (id))',
        'CREATE TABLE child2 (pid int, q int, FOREIGN KEY (pid, q) REFERENCES parent (id))',
      ]),
    ).toEqual([]);
  });
});
