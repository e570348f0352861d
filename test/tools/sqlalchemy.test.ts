// SQLAlchemy 2 over oxbow with psycopg 3 (`postgresql+psycopg://`) and psycopg2
// (`postgresql+psycopg2://`), against PostgreSQL 15 as the oracle: the same script
// (sqlalchemy_flow.py: create_all of a model with Integer (SERIAL) primary keys and a foreign key,
// ORM insert/update/delete/query, a rolled-back session, a savepoint (begin_nested) rolled back,
// the inspector, stream_results over a server-side cursor)
// runs on both servers and must see the same things, with no Python warning and no server NOTICE
// or WARNING (a ROLLBACK oxbow took for one outside a block would warn).

import { describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { runPython } from './python.js';

const drivers = ['psycopg', 'psycopg2'] as const;

for (const driver of drivers) {
  describe(`SQLAlchemy 2 with ${driver}`, () => {
    let oxbow: OxbowServer;
    let postgres: PostgresServer;
    let ours: Record<string, unknown>;
    let theirs: Record<string, unknown>;

    it('runs the whole flow on oxbow and on PostgreSQL 15', async () => {
      [oxbow, postgres] = await Promise.all([startOxbow(), startPostgres()]);
      try {
        ours = await runPython('sqlalchemy_flow.py', [`postgresql+${driver}://oxbow@${oxbow.host}:${oxbow.port}/oxbow`]);
        theirs = await runPython('sqlalchemy_flow.py', [`postgresql+${driver}://postgres@127.0.0.1:${postgres.port}/postgres`]);
      } finally {
        await Promise.all([oxbow.stop(), postgres.stop()]);
      }
    }, 240_000);

    it('serial ids come back through RETURNING and the foreign key holds, as on PostgreSQL', () => {
      expect(ours.author_ids).toEqual([1, 2]);
      expect(ours.book_serial_id).toBe(1);
      expect(ours.orphan).toBe('23503');
      for (const key of ['author_ids', 'book_serial_id', 'orphan']) expect(ours[key], key).toEqual(theirs[key]);
    });

    it('ORM writes and reads, rollback and savepoint as PostgreSQL', () => {
      expect(ours.orm).toEqual([
        { name: 'Ursula', books: ['The Dispossessed'] },
        { name: 'Stanislaw', books: ['Solaris', 'Fiasko'] },
      ]);
      expect(ours.after_rollback).toEqual([1, 2]);
      expect(ours.after_nested).toEqual([1, 2, 4]);
      for (const key of ['orm', 'after_rollback', 'after_nested']) expect(ours[key], key).toEqual(theirs[key]);
    });

    it('the inspector sees tables, views, materialized views, columns, the primary key and the foreign key as on PostgreSQL', () => {
      expect(ours.tables).toEqual(['author', 'book']);
      expect(ours.views).toEqual(['book_titles']);
      expect(ours.materialized_views).toEqual(['books_per_author']);
      expect(ours.pk).toEqual(['id']);
      expect(ours.fks).toEqual([{ columns: ['author_id'], table: 'author', referred: ['id'] }]);
      expect((ours.columns as { name: string; default: string | null }[]).find((column) => column.name === 'id')?.default).toBe("nextval('book_id_seq'::regclass)");
      for (const key of ['tables', 'views', 'materialized_views', 'columns', 'pk', 'fks']) expect(ours[key], key).toEqual(theirs[key]);
    });

    it('stream_results reads rows through a server-side cursor', () => {
      expect(ours.streamed).toEqual([[10, 'The Dispossessed'], [20, 'Solaris'], [21, 'Fiasko']]);
      expect(ours.streamed).toEqual(theirs.streamed);
    });

    it('no Python warnings and no server NOTICE or WARNING, rollbacks included', () => {
      expect(ours.warnings).toEqual([]);
      expect(ours.notices).toEqual([]);
      expect(theirs.notices).toEqual([]);
    });

    it('the inspector reflects indexes as on PostgreSQL', () => {
      expect(ours.indexes_error).toBeUndefined();
      expect(ours.indexes).toEqual([{ name: 'ix_book_author_id', columns: ['author_id'], unique: false }]);
      expect(ours.indexes).toEqual(theirs.indexes);
    });
  });
}
