// Golden differential test of the catalog queries pgjdbc sends: test/tools/jdbc/queries.json holds
// every metadata query pgjdbc 42.7.4 sent to a real PostgreSQL 15 while Metadata.java ran over
// the schema of metadata-run.ts (recorded from PostgreSQL's log_statement=all). Each query runs
// on PostgreSQL 15 and on oxbow, both with that schema, and the results must be equal as text:
// every row, in order, except
//   - the columns an entry lists in `ignore` (values that are the server's own: OIDs of objects
//     created by the schema, statistics, the user's name), which must still exist on both sides;
//   - entries with `subset: true` (queries over every type or database PostgreSQL has): each row
//     oxbow returns must be one of PostgreSQL's;
//   - entries with `differs` (the reason): oxbow must answer with the same columns, the rows may
//     differ (a catalog part oxbow does not have);
// and with the session's user and database name (postgres on PostgreSQL, oxbow on oxbow) read as
// one; rows of a query without ORDER BY compare in any order. Entries with `relationOids: true` name relations by OID (ResultSetMetaData's lookups): on
// oxbow each OID of a relation the schema created is replaced by the OID of the same relation.
//
// To record the queries again (another pgjdbc version, another schema):
//   OXBOW_RECORD_JDBC_QUERIES=1 npx vitest run test/tools/jdbc-queries.test.ts
// rewrites queries.json from PostgreSQL's log, keeping each query's `ignore` and `subset` when
// its text is unchanged; new queries start with neither.
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from '../support/pg-pair.js';
import { startPostgres } from '../support/postgres.js';
import { driverJar, runMetadata, SCHEMA } from './jdbc/metadata-run.js';

interface GoldenQuery {
  readonly sql: string;
  /** The parameters PostgreSQL logged for the query ($1, $2...), as text. */
  readonly params?: readonly (string | null)[];
  readonly ignore?: readonly string[];
  readonly subset?: boolean;
  readonly differs?: string;
  readonly relationOids?: boolean;
}

const GOLDEN = fileURLToPath(new URL('./jdbc/queries.json', import.meta.url));
const recording = process.env['OXBOW_RECORD_JDBC_QUERIES'] === '1';

/** `$1 = 'text', $2 = NULL`: a DETAIL line's parameter values. */
function loggedParameters(text: string): (string | null)[] {
  const values: (string | null)[] = [];
  for (const match of text.matchAll(/\$\d+ = (?:'((?:[^']|'')*)'|NULL)/g)) values.push(match[1] === undefined ? null : match[1].replaceAll("''", "'"));
  return values;
}

/** The metadata queries of a PostgreSQL log (log_statement=all), each once (with its parameters), in order. */
function metadataQueries(log: string): GoldenQuery[] {
  const statements: { lines: string[]; params?: (string | null)[] }[] = [];
  let current: { lines: string[]; params?: (string | null)[] } | undefined;
  for (const line of log.split('\n')) {
    const match = /LOG:\s+(?:statement|execute [^:]*): (.*)$/.exec(line);
    const detail = /DETAIL:\s+parameters: (.*)$/.exec(line);
    if (match !== null) {
      current = { lines: [match[1]!] };
      statements.push(current);
    } else if (detail !== null && current !== undefined) {
      current.params = loggedParameters(detail[1]!);
      current = undefined;
    } else if (current !== undefined && line.startsWith('\t')) {
      current.lines.push(line.slice(1));
    } else {
      current = undefined;
    }
  }
  const catalog = /pg_catalog\.|information_schema\.|\bpg_(type|class|namespace|proc|settings|database|index|attribute|get_keywords)\b/;
  const seen = new Set<string>();
  const queries: GoldenQuery[] = [];
  for (const statement of statements) {
    const sql = statement.lines.join('\n').trim();
    const key = JSON.stringify([sql, statement.params ?? []]);
    if (!/^select/i.test(sql) || !catalog.test(sql) || seen.has(key)) continue;
    seen.add(key);
    queries.push(statement.params === undefined ? { sql } : { sql, params: statement.params });
  }
  return queries;
}

async function record(): Promise<void> {
  const logDir = mkdtempSync(join(tmpdir(), 'oxbow-pglog-'));
  const postgresUser = readFileSync('/etc/passwd', 'utf8').split('\n').find((entry) => entry.startsWith('postgres:'))!.split(':');
  chownSync(logDir, Number(postgresUser[2]), Number(postgresUser[3]));
  const postgres = await startPostgres({
    settings: { log_statement: 'all', log_min_messages: 'warning', logging_collector: 'on', log_directory: logDir, log_filename: 'statements.log' },
  });
  try {
    for (const sql of SCHEMA) await postgres.query(sql);
    await runMetadata(driverJar(), `jdbc:postgresql://127.0.0.1:${postgres.port}/postgres`, 'postgres');
  } finally {
    await postgres.stop();
  }
  const previous = new Map<string, GoldenQuery>(existsSync(GOLDEN) ? (JSON.parse(readFileSync(GOLDEN, 'utf8')) as GoldenQuery[]).map((q) => [q.sql, q]) : []);
  const queries = metadataQueries(readFileSync(join(logDir, 'statements.log'), 'utf8')).map((query) => ({ ...previous.get(query.sql), ...query }));
  rmSync(logDir, { recursive: true, force: true });
  writeFileSync(GOLDEN, `${JSON.stringify(queries, null, 2)}\n`);
}

const golden: GoldenQuery[] = recording ? [] : (JSON.parse(readFileSync(GOLDEN, 'utf8')) as GoldenQuery[]);
let pair: PgPair;

beforeAll(async () => {
  if (recording) await record();
  pair = await startPgPair(SCHEMA);
}, 240_000);

afterAll(async () => {
  await pair?.stop();
});

type Rows = (string | null)[][];

/** The query with each OID of a relation PostgreSQL's schema made (>= 16384) replaced by oxbow's OID of that relation. */
async function withOxbowOids(sql: string): Promise<string> {
  const oids = [...new Set([...sql.matchAll(/\b(1[6-9]\d{3}|[2-9]\d{4})\b/g)].map((match) => match[1]!))];
  let text = sql;
  for (const oid of oids) {
    const named = await pair.onPostgres.query({ text: 'SELECT relname FROM pg_catalog.pg_class WHERE oid = $1::oid', values: [oid], rowMode: 'array' });
    expect(named.rows.length, `no relation with OID ${oid} on PostgreSQL`).toBe(1);
    const relname = (named.rows[0] as string[])[0]!;
    const mine = await pair.onOxbow.query({ text: "SELECT oid FROM pg_catalog.pg_class WHERE relname = $1 AND relnamespace = 'public'::regnamespace", values: [relname], rowMode: 'array' });
    expect(mine.rows.length, `no relation ${relname} on oxbow`).toBe(1);
    text = text.replace(new RegExp(`\\b${oid}\\b`, 'g'), String((mine.rows[0] as string[])[0]));
  }
  return text;
}

async function run(client: PgPair['onOxbow'], sql: string, params?: readonly (string | null)[]): Promise<{ columns: string[]; rows: Rows } | { error: string }> {
  try {
    const result = await client.query({ text: sql, values: params === undefined ? undefined : [...params], rowMode: 'array' });
    return { columns: result.fields.map((field) => field.name), rows: result.rows as Rows };
  } catch (error) {
    const failure = error as { code?: string; message?: string };
    return { error: `${failure.code ?? ''} ${failure.message ?? String(error)}` };
  }
}

describe('the catalog queries pgjdbc sends, oxbow against PostgreSQL 15', () => {
  it('has recorded queries', () => {
    expect(recording || golden.length > 10).toBe(true);
  });

  for (const [number, query] of golden.entries()) {
    const title = `query ${number + 1}: ${query.sql.replace(/\s+/g, ' ').slice(0, 90)}`;
    it(title, async () => {
      const oxbowSql = query.relationOids === true ? await withOxbowOids(query.sql) : query.sql;
      const [expected, actual] = await Promise.all([run(pair.onPostgres, query.sql, query.params), run(pair.onOxbow, oxbowSql, query.params)]);
      if ('error' in expected) throw new Error(`PostgreSQL failed the recorded query: ${expected.error}`);
      if ('error' in actual) throw new Error(`oxbow failed: ${actual.error}`);
      expect(actual.columns).toEqual(expected.columns);
      const ignored = new Set((query.ignore ?? []).map((name) => {
        const at = expected.columns.indexOf(name);
        expect(at, `ignored column ${name} is not in the result`).toBeGreaterThanOrEqual(0);
        return at;
      }));
      const comparable = (rows: Rows) =>
        rows.map((row) => row.map((value, i) => (ignored.has(i) ? '<ignored>' : value === 'postgres' || value === 'oxbow' ? '<user>' : value)));
      if (query.differs !== undefined) {
        expect(query.differs.length).toBeGreaterThan(0);
      } else if (query.subset === true) {
        const known = new Set(comparable(expected.rows).map((row) => JSON.stringify(row)));
        expect(actual.rows.length, 'oxbow returned no rows').toBeGreaterThan(0);
        for (const row of comparable(actual.rows)) expect(known.has(JSON.stringify(row)), JSON.stringify(row)).toBe(true);
      } else if (!/\border\s+by\b/i.test(query.sql)) {
        // No ORDER BY: the rows in any order.
        const sorted = (rows: Rows) => comparable(rows).map((row) => JSON.stringify(row)).sort();
        expect(sorted(actual.rows)).toEqual(sorted(expected.rows));
      } else {
        expect(comparable(actual.rows)).toEqual(comparable(expected.rows));
      }
    });
  }
});
