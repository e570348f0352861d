// SHOW CREATE SOURCE / SINK print a statement that creates the same object again, and
// EXPLAIN [MATERIALIZED VIEW] name prints an existing view's plan (RisingWave's forms).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import { openEngine, type OxbowEngine } from '../open-engine.js';
import type { Session } from '../engine.js';
import type { Row } from '../../../sql/value.js';
import { SqlError } from '../../../sql/errors.js';
import { createSinkText } from '../show-create-connector.js';
import type { RelationDef } from '../../../sql/catalog.js';
import type { CatalogSnapshot } from '../../catalog/catalog.js';

let engine: OxbowEngine;
let session: Session;

beforeEach(async () => {
  engine = await openEngine(createMemoryStateStore(), { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => {}, parameterStatus: () => {} });
});
afterEach(async () => {
  await engine.close();
});

async function rows(sql: string): Promise<Row[]> {
  let last: Row[] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    last = result.kind === 'rows' ? await result.cursor.next(0) : [];
  }
  return last;
}

async function failure(sql: string): Promise<SqlError> {
  try {
    await rows(sql);
  } catch (error) {
    if (error instanceof SqlError) return error;
    throw error;
  }
  throw new Error(`expected ${sql} to fail`);
}

describe('SHOW CREATE SOURCE and SINK', () => {
  it('prints a CREATE SOURCE that creates the same source again', async () => {
    await rows(
      "CREATE SOURCE gen (id int, v varchar, at timestamp, WATERMARK FOR at AS at - INTERVAL '5 seconds') WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '10', datagen.rows.per.second = '1000')",
    );
    const [[name, text]] = (await rows('SHOW CREATE SOURCE gen')) as [[string, string]];
    expect(name).toBe('public.gen');
    expect(text).toBe(
      "CREATE SOURCE \"public\".gen (id integer, v character varying, at timestamp without time zone, WATERMARK FOR at AS at - INTERVAL '5 seconds') WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '10', datagen.rows.per.second = '1000')".replace('"public"', 'public'),
    );
    await rows('DROP SOURCE gen');
    await rows(text);
    expect(await rows('SHOW CREATE SOURCE gen')).toEqual([[name, text]]);
  });

  it("prints a Kafka source's INCLUDE, key, FORMAT and ENCODE", async () => {
    await rows(
      "CREATE SOURCE k (id int, v varchar, PRIMARY KEY (id)) INCLUDE partition AS p INCLUDE offset AS o WITH (connector = 'kafka', topic = 'it''s', properties.bootstrap.server = '127.0.0.1:9', validate = 'false') FORMAT UPSERT ENCODE JSON",
    );
    const [[, text]] = (await rows('SHOW CREATE SOURCE k')) as [[string, string]];
    expect(text).toBe(
      "CREATE SOURCE public.k (id integer, v character varying, PRIMARY KEY (id)) INCLUDE partition AS p INCLUDE offset AS o WITH (connector = 'kafka', topic = 'it''s', properties.bootstrap.server = '127.0.0.1:9', validate = 'false') FORMAT UPSERT ENCODE JSON",
    );
    await rows('DROP SOURCE k');
    await rows(text);
    expect(await rows('SHOW CREATE SOURCE k')).toEqual([['public.k', text]]);
    expect((await failure('SHOW CREATE SINK k')).code).toBe('42809');
  });

  it('prints CREATE SINK FROM and CREATE SINK AS', () => {
    const from = { id: 7, kind: 'materialized_view', schema: 'public', name: 'totals', columns: [], primaryKey: [], dependsOn: [] } as RelationDef;
    const catalog = { relationById: (id: number) => (id === 7 ? from : undefined) } as unknown as CatalogSnapshot;
    const options = { connector: 'kafka', topic: 'out', 'properties.bootstrap.server': '127.0.0.1:9092' };
    const sink = { id: 8, kind: 'sink', schema: 'public', name: 's', columns: [], primaryKey: [], dependsOn: [7], options, format: 'upsert', encode: 'json' } as RelationDef;
    expect(createSinkText(sink, catalog)).toBe("CREATE SINK public.s FROM public.totals WITH (connector = 'kafka', topic = 'out', properties.bootstrap.server = '127.0.0.1:9092') FORMAT UPSERT ENCODE JSON");
    expect(createSinkText({ ...sink, definition: 'SELECT 1 AS one', format: 'plain' }, catalog)).toBe(
      "CREATE SINK public.s AS SELECT 1 AS one WITH (connector = 'kafka', topic = 'out', properties.bootstrap.server = '127.0.0.1:9092') FORMAT PLAIN ENCODE JSON",
    );
  });
});

describe('EXPLAIN of an existing view', () => {
  it("prints a materialized view's streaming plan, as EXPLAIN CREATE MATERIALIZED VIEW does", async () => {
    await rows('CREATE TABLE t (k int PRIMARY KEY, g int, v int)');
    const query = 'SELECT g, count(*) AS n, sum(v) AS total FROM t GROUP BY g';
    const expected = await rows(`EXPLAIN CREATE MATERIALIZED VIEW mv AS ${query}`);
    await rows(`CREATE MATERIALIZED VIEW mv AS ${query}`);
    expect(expected.length).toBeGreaterThan(1);
    expect(await rows('EXPLAIN mv')).toEqual(expected);
    expect(await rows('EXPLAIN MATERIALIZED VIEW mv')).toEqual(expected);
    expect(await rows('EXPLAIN MATERIALIZED VIEW public.mv')).toEqual(expected);
  });

  it("prints a view's query plan; other relations and unknown names are errors", async () => {
    await rows('CREATE TABLE t (k int PRIMARY KEY, v int)');
    await rows('CREATE VIEW big AS SELECT k FROM t WHERE v > 10');
    expect(await rows('EXPLAIN big')).toEqual(await rows('EXPLAIN SELECT k FROM t WHERE v > 10'));
    expect((await failure('EXPLAIN t')).code).toBe('42809');
    expect((await failure('EXPLAIN nowhere')).code).toBe('42P01');
    expect((await failure('EXPLAIN MATERIALIZED VIEW')).code).toBe('42601');
    // PostgreSQL's EXPLAIN of a statement is untouched.
    expect((await rows('EXPLAIN SELECT 1')).length).toBeGreaterThan(0);
  });
});
