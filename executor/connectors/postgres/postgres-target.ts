// The PostgreSQL side of a sink: connections with deadlines, the target table's description and
// the checks of CREATE SINK (42P01 missing table, 42703 missing column, 42804 a column of another
// type, 42P10 no unique constraint on an upsert sink's key, 08001 unreachable), the table made
// by `create_table_if_not_exists`, and the progress table `oxbow_sink_progress(sink_name text
// primary key, epoch bigint)` in the target's schema, whose row commits with the rows it covers.

import pg from 'pg';
import type { DataType } from '../../../sql/types.js';
import { SqlError, SqlState, type SqlStateCode } from '../../../sql/errors.js';
import { formatTypeName } from '../../catalog/type-names.js';
import type { PostgresSinkOptions } from './postgres-options.js';
import { pgSocketWithin } from '../dns-lookup.js';

export const PROGRESS_TABLE = 'oxbow_sink_progress';

/** A column the sink writes: its name and oxbow type. */
export interface SinkColumn {
  readonly name: string;
  readonly type: DataType;
}

/** A target column: PostgreSQL's type name (pg_type.typname) and format_type, for the casts. */
export interface TargetColumn {
  readonly typname: string;
  readonly formatted: string;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function qualifiedTable(options: PostgresSinkOptions, table = options.table): string {
  return `${quoteIdent(options.schema)}.${quoteIdent(table)}`;
}

export function describeAddress(options: PostgresSinkOptions): string {
  return `${options.host}:${options.port}/${options.database}`;
}

/** A connected client; every query is bounded by `queryTimeoutMs` (client side and statement_timeout). */
export async function connectPostgres(options: PostgresSinkOptions): Promise<pg.Client> {
  const client = new pg.Client({
    host: options.host,
    port: options.port,
    user: options.user,
    password: options.password,
    database: options.database,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // The name lookup within the connect deadline, named in the error (../dns-lookup.ts).
    stream: pgSocketWithin(options.connectTimeoutMs),
    query_timeout: options.queryTimeoutMs,
    statement_timeout: options.queryTimeoutMs,
    keepAlive: true,
    application_name: 'oxbow-sink',
  });
  // A connection lost between queries surfaces on the next query; never crash the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return client;
}

/** PostgreSQL's typname of an oxbow type (arrays as `_element`). */
function typnameOf(type: DataType): string {
  if (type.name === 'array') return `_${type.element === undefined ? 'text' : typnameOf(type.element)}`;
  return type.name;
}

const STRINGS = new Set(['text', 'varchar', 'bpchar']);
const WIDER: Readonly<Record<string, readonly string[]>> = {
  int2: ['int4', 'int8', 'numeric', 'float4', 'float8'],
  int4: ['int8', 'numeric', 'float8'],
  int8: ['numeric'],
  float4: ['float8'],
  json: ['jsonb'],
  jsonb: ['json'],
};

/** Whether a target column of PostgreSQL type `target` takes every value of oxbow type `source` exactly. */
export function compatible(source: DataType, target: string): boolean {
  const name = typnameOf(source);
  if (name === target) return true;
  if (STRINGS.has(name) && STRINGS.has(target)) return true;
  return WIDER[name]?.includes(target) ?? false;
}

/** The target table's columns by name, and the column sets of its unique indexes; undefined when it does not exist. */
export async function describeTarget(client: pg.Client, options: PostgresSinkOptions): Promise<{ columns: Map<string, TargetColumn>; uniqueKeys: string[][] } | undefined> {
  const found = await client.query<{ oid: string | null }>('SELECT to_regclass($1)::oid AS oid', [qualifiedTable(options)]);
  const oid = found.rows[0]?.oid ?? null;
  if (oid === null) return undefined;
  const columns = new Map<string, TargetColumn>();
  const described = await client.query<{ attname: string; typname: string; formatted: string }>(
    `SELECT a.attname, t.typname, format_type(a.atttypid, a.atttypmod) AS formatted
       FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [oid],
  );
  for (const row of described.rows) columns.set(row.attname, { typname: row.typname, formatted: row.formatted });
  const keys = await client.query<{ names: string[] }>(
    `SELECT array_agg(a.attname::text ORDER BY a.attname) AS names
       FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
      WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
      GROUP BY i.indexrelid`,
    [oid],
  );
  return { columns, uniqueKeys: keys.rows.map((row) => row.names) };
}

function connectError(options: PostgresSinkOptions, error: unknown): SqlError {
  return new SqlError(SqlState.sqlclientUnableToEstablishSqlconnection, `cannot connect to PostgreSQL at ${describeAddress(options)}: ${error instanceof Error ? error.message : String(error)}`, {
    hint: `Checked within connect_timeout_ms (${options.connectTimeoutMs} ms).`,
  });
}

/**
 * CREATE SINK's check of the target: reachable within the deadline, the table present (or made
 * with `create_table_if_not_exists`) with a column of a compatible type for each sink column and,
 * for an upsert sink, a unique constraint on exactly its key columns; the progress table made.
 */
export async function prepareTarget(options: PostgresSinkOptions, columns: readonly SinkColumn[], keyColumns: readonly string[]): Promise<void> {
  let client: pg.Client;
  try {
    client = await connectPostgres(options);
  } catch (error) {
    throw connectError(options, error);
  }
  try {
    let target = await describeTarget(client, options);
    if (target === undefined && options.createTable) {
      const definitions = columns.map((column) => `${quoteIdent(column.name)} ${formatTypeName(column.type)}`);
      if (options.type === 'upsert') definitions.push(`PRIMARY KEY (${keyColumns.map(quoteIdent).join(', ')})`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${qualifiedTable(options)} (${definitions.join(', ')})`);
      target = await describeTarget(client, options);
    }
    if (target === undefined) {
      throw new SqlError(SqlState.undefinedTable, `target table "${options.schema}.${options.table}" does not exist in PostgreSQL at ${describeAddress(options)}`, {
        hint: "Create it with the sink's columns, or add create_table_if_not_exists = 'true'.",
      });
    }
    for (const column of columns) {
      const found = target.columns.get(column.name);
      if (found === undefined) {
        throw new SqlError(SqlState.undefinedColumn, `column "${column.name}" of the sink does not exist in target table "${options.schema}.${options.table}"`, {
          hint: `Its columns: ${[...target.columns.keys()].join(', ')}.`,
        });
      }
      if (!compatible(column.type, found.typname)) {
        throw new SqlError(SqlState.datatypeMismatch, `column "${column.name}" is of type ${found.formatted} in target table "${options.schema}.${options.table}" but the sink writes ${formatTypeName(column.type)}`);
      }
    }
    if (options.type === 'upsert') {
      const wanted = [...keyColumns].sort().join(',');
      if (!target.uniqueKeys.some((names) => [...names].sort().join(',') === wanted)) {
        throw new SqlError(SqlState.invalidColumnReference, `target table "${options.schema}.${options.table}" has no primary key or unique constraint on (${keyColumns.join(', ')}), the upsert sink's key`, {
          hint: "Add one in PostgreSQL, name the target's key with primary_key = '...', or use type = 'append-only'.",
        });
      }
    }
    await ensureProgressTable(client, options);
  } catch (error) {
    if (error instanceof SqlError) throw error;
    const failure = error as { code?: string; message?: string };
    throw new SqlError(typeof failure.code === 'string' && failure.code.length === 5 ? (failure.code as SqlStateCode) : SqlState.connectionFailure, `PostgreSQL at ${describeAddress(options)}: ${failure.message ?? String(error)}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function ensureProgressTable(client: pg.Client, options: PostgresSinkOptions): Promise<void> {
  await client.query(`CREATE TABLE IF NOT EXISTS ${qualifiedTable(options, PROGRESS_TABLE)} (sink_name text PRIMARY KEY, epoch bigint NOT NULL)`).catch(async (error: { code?: string }) => {
    // Two sinks creating it at once: one wins, the other sees the unique violation of pg_type.
    if (error.code !== '23505' && error.code !== '42P07') throw error;
  });
}
