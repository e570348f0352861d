// pgjdbc against oxbow, PostgreSQL 15 the oracle: test/tools/jdbc/Metadata.java prints what
// DatabaseMetaData and ResultSetMetaData return over one schema (tables with primary keys, an
// index, a view, a materialized view, a SQL function), run against both servers with the same
// schema; each call's rows must equal PostgreSQL's in the columns whose meaning is the same on
// both (names, key columns, types; not OIDs, statistics or the user's name). The driver comes from
// Maven Central through scripts/jdbc-tools.sh (a JDK and Maven needed: .ci/run installs them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from '../support/pg-pair.js';
import { driverJar, runMetadata, SCHEMA, type CallResult } from './jdbc/metadata-run.js';

/** The named columns of each row, as objects (unknown names fail the test). */
function pick(result: CallResult | undefined, names: readonly string[]): Record<string, unknown>[] {
  expect(result, 'call missing from the output').toBeDefined();
  expect(result!.error, `${result!.call} failed`).toBeUndefined();
  const columns = result!.columns!.map((c) => c.toLowerCase());
  const indices = names.map((name) => {
    const at = columns.indexOf(name.toLowerCase());
    expect(at, `${result!.call} has no column ${name}`).toBeGreaterThanOrEqual(0);
    return at;
  });
  return result!.rows!.map((row) => Object.fromEntries(names.map((name, i) => [name, row[indices[i]!]])));
}

let pair: PgPair;
let onPostgres: Map<string, CallResult>;
let onOxbow: Map<string, CallResult>;

beforeAll(async () => {
  const jar = driverJar();
  pair = await startPgPair(SCHEMA);
  const postgresUrl = `jdbc:postgresql://127.0.0.1:${pair.postgres.port}/postgres`;
  const oxbowUrl = `jdbc:postgresql://127.0.0.1:${pair.oxbow.port}/oxbow`;
  [onPostgres, onOxbow] = await Promise.all([runMetadata(jar, postgresUrl, 'postgres'), runMetadata(jar, oxbowUrl, 'oxbow')]);
}, 240_000);

afterAll(async () => {
  await pair?.stop();
});

function same(call: string, names: readonly string[]): void {
  const expected = pick(onPostgres.get(call), names);
  expect(expected.length, `${call} on PostgreSQL returned no rows to compare`).toBeGreaterThan(0);
  expect(pick(onOxbow.get(call), names), call).toEqual(expected);
}

describe('pgjdbc DatabaseMetaData against PostgreSQL 15', () => {
  it('ran the same calls on both servers, and oxbow answered each without an error', () => {
    expect([...onOxbow.keys()]).toEqual([...onPostgres.keys()]);
    // Savepoints are checked on their own below.
    const failed = [...onOxbow.values()].filter((result) => result.error !== undefined && result.call !== 'savepoints');
    expect(failed.map((result) => `${result.call}: ${result.error!.sqlstate} ${result.error!.message}`)).toEqual([]);
  });

  it('getSchemas, getTableTypes and getTables', () => {
    same('getSchemas', ['TABLE_SCHEM']);
    same('getTableTypes', ['TABLE_TYPE']);
    same('getTables', ['TABLE_SCHEM', 'TABLE_NAME', 'TABLE_TYPE', 'REMARKS']);
  });

  it('getColumns: names, types, sizes, nullability, defaults, remarks', () => {
    same('getColumns', [
      'TABLE_SCHEM', 'TABLE_NAME', 'COLUMN_NAME', 'DATA_TYPE', 'TYPE_NAME', 'COLUMN_SIZE', 'DECIMAL_DIGITS', 'NUM_PREC_RADIX',
      'NULLABLE', 'REMARKS', 'COLUMN_DEF', 'ORDINAL_POSITION', 'IS_NULLABLE', 'IS_AUTOINCREMENT', 'IS_GENERATEDCOLUMN',
    ]);
  });

  it('getPrimaryKeys, getIndexInfo and getBestRowIdentifier of each relation', () => {
    for (const table of ['customers', 'orders', 'lines']) {
      same(`getPrimaryKeys ${table}`, ['TABLE_SCHEM', 'TABLE_NAME', 'COLUMN_NAME', 'KEY_SEQ', 'PK_NAME']);
      same(`getIndexInfo ${table}`, ['TABLE_SCHEM', 'TABLE_NAME', 'NON_UNIQUE', 'INDEX_NAME', 'TYPE', 'ORDINAL_POSITION', 'COLUMN_NAME', 'ASC_OR_DESC', 'FILTER_CONDITION']);
      same(`getBestRowIdentifier ${table}`, ['SCOPE', 'COLUMN_NAME', 'DATA_TYPE', 'TYPE_NAME', 'COLUMN_SIZE', 'DECIMAL_DIGITS', 'PSEUDO_COLUMN']);
    }
    for (const relation of ['big_orders', 'customer_totals']) {
      for (const call of ['getPrimaryKeys', 'getIndexInfo', 'getBestRowIdentifier']) {
        expect(onOxbow.get(`${call} ${relation}`)?.rows, `${call} ${relation}`).toEqual(onPostgres.get(`${call} ${relation}`)?.rows);
      }
    }
  });

  it('getSchemas() and getTables over every schema', () => {
    // oxbow's own schema, oxbow_catalog, is the one more.
    const schemas = (result: CallResult | undefined) => pick(result, ['TABLE_SCHEM']).map((row) => row['TABLE_SCHEM']);
    expect(schemas(onOxbow.get('getAllSchemas'))).toEqual([...schemas(onPostgres.get('getAllSchemas')), 'oxbow_catalog'].sort());
    const publicTables = (result: CallResult | undefined) => pick(result, ['TABLE_SCHEM', 'TABLE_NAME', 'TABLE_TYPE']).filter((row) => row['TABLE_SCHEM'] === 'public');
    expect(publicTables(onOxbow.get('getAllTables'))).toEqual(publicTables(onPostgres.get('getAllTables')));
    const systemTables = pick(onOxbow.get('getAllTables'), ['TABLE_SCHEM', 'TABLE_NAME', 'TABLE_TYPE']).filter((row) => row['TABLE_SCHEM'] === 'pg_catalog');
    expect(systemTables).toContainEqual({ TABLE_SCHEM: 'pg_catalog', TABLE_NAME: 'pg_class', TABLE_TYPE: 'SYSTEM TABLE' });
  });

  it('getCrossReference (no foreign keys on either side)', () => {
    expect(onOxbow.get('getCrossReference')).toEqual(onPostgres.get('getCrossReference'));
  });

  it('getImportedKeys and getExportedKeys answer (no foreign keys on either side)', () => {
    for (const table of ['customers', 'orders', 'lines', 'big_orders', 'customer_totals']) {
      for (const call of ['getImportedKeys', 'getExportedKeys']) {
        const result = onOxbow.get(`${call} ${table}`)!;
        expect(result.error, `${call} ${table}`).toBeUndefined();
        expect(result.columns).toEqual(onPostgres.get(`${call} ${table}`)!.columns);
        expect(result.rows).toEqual(onPostgres.get(`${call} ${table}`)!.rows);
      }
    }
  });

  it('getTablePrivileges and getColumnPrivileges, the user name aside', () => {
    const normalize = (rows: Record<string, unknown>[], user: string) => rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v === user ? 'USER' : v])));
    const tableColumns = ['TABLE_SCHEM', 'TABLE_NAME', 'GRANTOR', 'GRANTEE', 'PRIVILEGE', 'IS_GRANTABLE'];
    expect(normalize(pick(onOxbow.get('getTablePrivileges'), tableColumns), 'oxbow')).toEqual(normalize(pick(onPostgres.get('getTablePrivileges'), tableColumns), 'postgres'));
    const columnColumns = ['TABLE_SCHEM', 'TABLE_NAME', 'COLUMN_NAME', 'GRANTOR', 'GRANTEE', 'PRIVILEGE', 'IS_GRANTABLE'];
    for (const table of ['customers', 'orders', 'lines']) {
      const call = `getColumnPrivileges ${table}`;
      expect(normalize(pick(onOxbow.get(call), columnColumns), 'oxbow'), call).toEqual(normalize(pick(onPostgres.get(call), columnColumns), 'postgres'));
    }
  });

  it("getTypeInfo: each of oxbow's types as PostgreSQL describes it", () => {
    const names = ['TYPE_NAME', 'DATA_TYPE', 'PRECISION', 'LITERAL_PREFIX', 'LITERAL_SUFFIX', 'NULLABLE', 'CASE_SENSITIVE', 'SEARCHABLE', 'UNSIGNED_ATTRIBUTE', 'AUTO_INCREMENT', 'MINIMUM_SCALE', 'MAXIMUM_SCALE', 'NUM_PREC_RADIX'];
    const expected = new Map(pick(onPostgres.get('getTypeInfo'), names).map((row) => [row['TYPE_NAME'], row]));
    const actual = pick(onOxbow.get('getTypeInfo'), names);
    const typeNames = actual.map((row) => row['TYPE_NAME']);
    for (const name of ['bool', 'int2', 'int4', 'int8', 'numeric', 'text', 'varchar', 'timestamptz', 'uuid', 'jsonb', '_int4', '_text', 'serial', 'bigserial']) {
      expect(typeNames, name).toContain(name);
    }
    for (const row of actual) expect(row, String(row['TYPE_NAME'])).toEqual(expected.get(row['TYPE_NAME']));
  });

  it('getFunctions and getFunctionColumns of a SQL function', () => {
    same('getFunctions', ['FUNCTION_SCHEM', 'FUNCTION_NAME', 'FUNCTION_TYPE']);
    same('getFunctionColumns', ['FUNCTION_SCHEM', 'FUNCTION_NAME', 'COLUMN_NAME', 'COLUMN_TYPE', 'DATA_TYPE', 'TYPE_NAME']);
    // PostgreSQL 15's pgjdbc lists procedures only (prokind 'p'): none on either side.
    expect(pick(onOxbow.get('getProcedures'), ['PROCEDURE_NAME'])).toEqual(pick(onPostgres.get('getProcedures'), ['PROCEDURE_NAME']));
  });

  it('ResultSetMetaData of each relation: names, types, nullability, table names', () => {
    for (const relation of ['customers', 'orders', 'lines', 'big_orders', 'customer_totals']) {
      const call = `ResultSetMetaData ${relation}`;
      expect(onOxbow.get(call), call).toEqual(onPostgres.get(call));
    }
  });

  it('getSQLKeywords and the identifier quote', () => {
    expect(onOxbow.get('keywords')).toEqual(onPostgres.get('keywords'));
    expect(onOxbow.get('identifierQuote')).toEqual(onPostgres.get('identifierQuote'));
  });

  it('a fetch size with autocommit off reads every row, in batches', () => {
    expect(onPostgres.get('fetchSize')!.rows).toEqual([[1000, 500500]]);
    expect(onOxbow.get('fetchSize')).toEqual(onPostgres.get('fetchSize'));
  });

  it('setSavepoint, rollback to one, release another, commit', () => {
    expect(onPostgres.get('savepoints')!.rows).toEqual([[1], [3]]);
    expect(onOxbow.get('savepoints')).toEqual(onPostgres.get('savepoints'));
  });

  it('the connection stays usable to the end', () => {
    expect(onOxbow.get('alive')!.rows).toEqual([[1]]);
  });
});
