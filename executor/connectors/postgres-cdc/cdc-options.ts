// The WITH options of `connector = 'postgres-cdc'` and the checks CREATE runs against the upstream
// server before the catalog commits: it connects (within `connect.timeout.ms`), requires
// wal_level = logical, finds the upstream table, matches the declared columns, types and primary
// key against it, and makes sure the publication carries the table (creating the publication when
// it is missing and `publication.create.enable` allows it). Every failure is a SqlError with the
// server's SQLSTATE (28P01 wrong password, 3D000 unknown database) or oxbow's (08001 unreachable,
// 42P01 no such table, 42703 / 42804 / 42P16 columns, 55000 wal_level or publication).
//
// Deadlines (milliseconds): `connect.timeout.ms` (10000) for a connection, name lookup and
// authentication included; `query.timeout.ms` (60000) for a query without any answer from the
// server (CREATE's checks, the snapshot, the WAL monitor); `keepalive.timeout.ms` (30000) for the
// replication stream without any message: oxbow asks for a keepalive reply after half of it, and
// past it closes the stream and reconnects with backoff from the committed offset.

import type { ColumnDef, RelationDef } from '../../../sql/catalog.js';
import { SqlError, SqlState, type SqlStateCode } from '../../../sql/errors.js';
import { formatTypeName } from '../../catalog/type-names.js';
import { PgClient, PgError, quoteIdent, quoteLiteral, type PgConnectOptions, type QueryRows } from './pg-client.js';

export const POSTGRES_CDC = 'postgres-cdc';

export interface CdcOptions {
  readonly connect: PgConnectOptions;
  readonly schema: string;
  readonly table: string;
  readonly slot: string;
  readonly publication: string;
  readonly createPublication: boolean;
  /** The replication stream's deadline without any message from the server. */
  readonly keepaliveTimeoutMs: number;
}

export function isPostgresCdc(relation: Pick<RelationDef, 'options'>): boolean {
  return (relation.options?.['connector'] ?? '').toLowerCase() === POSTGRES_CDC;
}

/** The slot a table gets when `slot.name` is not given: from its schema and name. */
export function defaultSlotName(schema: string, name: string): string {
  return `oxbow_${schema}_${name}`.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 63);
}

const KNOWN = new Set(['connector', 'hostname', 'port', 'username', 'password', 'database.name', 'schema.name', 'table.name', 'slot.name', 'publication.name', 'publication.create.enable', 'connect.timeout.ms', 'query.timeout.ms', 'keepalive.timeout.ms']);

function milliseconds(options: Readonly<Record<string, string>>, name: string, fallback: number): number {
  const text = options[name];
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text.trim()) || Number(text) <= 0) throw new SqlError(SqlState.invalidParameterValue, `invalid ${name} "${text}"`, { hint: 'Milliseconds, a positive integer.' });
  return Number(text);
}

export function cdcOptions(options: Readonly<Record<string, string>>): CdcOptions {
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new SqlError(SqlState.invalidParameterValue, `unknown postgres-cdc option "${key}"`, { hint: `Options: ${[...KNOWN].join(', ')}.` });
  }
  const required = (key: string): string => {
    const value = options[key];
    if (value === undefined || value === '') throw new SqlError(SqlState.invalidParameterValue, `the postgres-cdc option "${key}" is required`);
    return value;
  };
  const port = Number(options['port'] ?? '5432');
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new SqlError(SqlState.invalidParameterValue, `invalid port "${options['port']}"`);
  const timeout = milliseconds(options, 'connect.timeout.ms', 10_000);
  const queryTimeoutMs = milliseconds(options, 'query.timeout.ms', 60_000);
  const create = (options['publication.create.enable'] ?? 'true').toLowerCase();
  if (create !== 'true' && create !== 'false') throw new SqlError(SqlState.invalidParameterValue, 'publication.create.enable must be true or false');
  return {
    connect: { host: required('hostname'), port, user: required('username'), password: options['password'] ?? '', database: required('database.name'), connectTimeoutMs: timeout, queryTimeoutMs },
    schema: options['schema.name'] ?? 'public',
    table: required('table.name'),
    slot: required('slot.name'),
    publication: options['publication.name'] ?? 'rw_publication',
    createPublication: create === 'true',
    keepaliveTimeoutMs: milliseconds(options, 'keepalive.timeout.ms', 30_000),
  };
}

/** A connection failure or a server error as the SqlError CREATE answers with. */
export function asSqlError(error: unknown, what: string): SqlError {
  if (error instanceof SqlError) return error;
  if (error instanceof PgError) return new SqlError(error.code as SqlStateCode, `${what}: ${error.message}`, error.detail === undefined ? {} : { detail: error.detail });
  return new SqlError(SqlState.connectionFailure, `${what}: ${error instanceof Error ? error.message : String(error)}`);
}

/** Upstream type names oxbow reads into a declared column of the same name (text kinds read into each other). */
function typesMatch(declared: string, upstream: string): boolean {
  const strip = (name: string): string => name.replace(/\(.*?\)/g, '').trim();
  const stringy = new Set(['text', 'character varying', 'character', 'varchar', 'bpchar']);
  const a = strip(declared);
  const b = strip(upstream);
  if (a === b) return true;
  if (stringy.has(a) && stringy.has(b)) return true;
  const base = (name: string): string => name.replace(/\[\]$/, '');
  return a.endsWith('[]') === b.endsWith('[]') && stringy.has(base(a)) && stringy.has(base(b));
}

/** CREATE SOURCE's check of a shared postgres-cdc source: the server answers, wal_level is logical. */
export async function checkServer(connect: PgConnectOptions): Promise<void> {
  const where = `${connect.host}:${connect.port}`;
  let client: PgClient;
  try {
    client = await PgClient.connect(connect);
  } catch (error) {
    throw asSqlError(error, `postgres-cdc: cannot connect to ${where}`);
  }
  try {
    await requireLogical(client, where);
  } catch (error) {
    throw asSqlError(error, `postgres-cdc: ${where}`);
  } finally {
    client.close();
  }
}

async function requireLogical(client: PgClient, where: string): Promise<void> {
  const level = await client.query('SHOW wal_level');
  if (level.rows[0]?.[0] !== 'logical') {
    throw new SqlError(SqlState.objectNotInPrerequisiteState, `postgres-cdc: wal_level of ${where} is "${level.rows[0]?.[0]}", not "logical"`, {
      hint: 'Set wal_level = logical in postgresql.conf and restart PostgreSQL.',
    });
  }
}

async function readColumns(client: PgClient, options: CdcOptions): Promise<QueryRows> {
  const found = await client.query(
    `SELECT a.attname, format_type(a.atttypid, a.atttypmod), coalesce(a.attnum = ANY (i.indkey::int2[]), false)
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
      WHERE n.nspname = ${quoteLiteral(options.schema)} AND c.relname = ${quoteLiteral(options.table)} AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
  );
  if (found.rows.length === 0) throw new SqlError(SqlState.undefinedTable, `postgres-cdc: upstream table "${options.schema}.${options.table}" does not exist in database "${options.connect.database}"`);
  return found;
}

/** The upstream table's columns (name, type as format_type prints it, part of the primary key), for a CREATE TABLE without a column list. */
export async function upstreamColumns(options: CdcOptions): Promise<{ name: string; type: string; key: boolean }[]> {
  const where = `${options.connect.host}:${options.connect.port}`;
  let client: PgClient;
  try {
    client = await PgClient.connect(options.connect);
  } catch (error) {
    throw asSqlError(error, `postgres-cdc: cannot connect to ${where}`);
  }
  try {
    return (await readColumns(client, options)).rows.map((row) => ({ name: row[0]!, type: row[1]!, key: row[2] === 't' }));
  } catch (error) {
    throw asSqlError(error, `postgres-cdc: ${options.schema}.${options.table}`);
  } finally {
    client.close();
  }
}

/**
 * CREATE's check of a postgres-cdc table against its upstream table (see the file comment).
 * `columns` are the declared columns, `primaryKey` their key indexes.
 */
export async function checkUpstream(options: CdcOptions, columns: readonly ColumnDef[], primaryKey: readonly number[]): Promise<void> {
  const where = `${options.connect.host}:${options.connect.port}`;
  let client: PgClient;
  try {
    client = await PgClient.connect(options.connect);
  } catch (error) {
    throw asSqlError(error, `postgres-cdc: cannot connect to ${where}`);
  }
  const upstream = `${options.schema}.${options.table}`;
  try {
    await requireLogical(client, where);
    const found = await readColumns(client, options);
    const upstreamColumns = new Map(found.rows.map((row) => [row[0]!, { type: row[1]!, key: row[2] === 't' }]));
    for (const column of columns) {
      const match = upstreamColumns.get(column.name);
      if (match === undefined) throw new SqlError(SqlState.undefinedColumn, `postgres-cdc: column "${column.name}" does not exist in upstream table "${upstream}"`);
      const declared = formatTypeName(column.type);
      if (!typesMatch(declared, match.type)) {
        throw new SqlError(SqlState.datatypeMismatch, `postgres-cdc: column "${column.name}" is declared ${declared} but upstream table "${upstream}" has ${match.type}`);
      }
    }
    const upstreamKey = found.rows.filter((row) => row[2] === 't').map((row) => row[0]!);
    const declaredKey = primaryKey.map((index) => columns[index]!.name);
    if (upstreamKey.length === 0) throw new SqlError(SqlState.invalidTableDefinition, `postgres-cdc: upstream table "${upstream}" has no primary key`, { hint: 'oxbow applies updates and deletes by the upstream primary key.' });
    if ([...declaredKey].sort().join(',') !== [...upstreamKey].sort().join(',')) {
      throw new SqlError(SqlState.invalidTableDefinition, `postgres-cdc: the declared primary key (${declaredKey.join(', ')}) differs from upstream table "${upstream}"'s (${upstreamKey.join(', ')})`, {
        hint: `Declare PRIMARY KEY (${upstreamKey.join(', ')}).`,
      });
    }
    const publication = await client.query(`SELECT 1 FROM pg_publication WHERE pubname = ${quoteLiteral(options.publication)}`);
    if (publication.rows.length === 0) {
      if (!options.createPublication) {
        throw new SqlError(SqlState.objectNotInPrerequisiteState, `postgres-cdc: publication "${options.publication}" does not exist`, {
          hint: `CREATE PUBLICATION ${quoteIdent(options.publication)} FOR TABLE ${quoteIdent(options.schema)}.${quoteIdent(options.table)} upstream, or set publication.create.enable = 'true'.`,
        });
      }
      await client.query(`CREATE PUBLICATION ${quoteIdent(options.publication)} FOR TABLE ${quoteIdent(options.schema)}.${quoteIdent(options.table)}`);
    } else {
      const carries = await client.query(
        `SELECT 1 FROM pg_publication_tables WHERE pubname = ${quoteLiteral(options.publication)} AND schemaname = ${quoteLiteral(options.schema)} AND tablename = ${quoteLiteral(options.table)}`,
      );
      if (carries.rows.length === 0) {
        throw new SqlError(SqlState.objectNotInPrerequisiteState, `postgres-cdc: publication "${options.publication}" does not include table "${upstream}"`, {
          hint: `ALTER PUBLICATION ${quoteIdent(options.publication)} ADD TABLE ${quoteIdent(options.schema)}.${quoteIdent(options.table)} upstream, or name another publication.name.`,
        });
      }
    }
    const slot = await client.query(`SELECT active FROM pg_replication_slots WHERE slot_name = ${quoteLiteral(options.slot)}`);
    if (slot.rows.length > 0) {
      throw new SqlError(SqlState.duplicateObject, `postgres-cdc: replication slot "${options.slot}" already exists on ${where}`, {
        hint: `Name another slot.name, or drop it upstream with SELECT pg_drop_replication_slot('${options.slot}').`,
      });
    }
  } catch (error) {
    throw asSqlError(error, `postgres-cdc: ${upstream}`);
  } finally {
    client.close();
  }
}
