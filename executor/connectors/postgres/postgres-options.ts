// WITH options of a PostgreSQL sink, checked (22023 for a missing or bad option):
//   connector = 'postgres': hostname (or host), port (5432), user, password (''), database,
//     table, schema ('public');
//   connector = 'jdbc' (RisingWave's form): jdbc.url = 'jdbc:postgresql://host[:port]/database
//     [?user=..&password=..]', table.name (or table), schema.name (or schema), user / password
//     options when the URL has none;
//   both: type = 'upsert' (default) | 'append-only', primary_key = 'a,b' (sink-key.ts),
//     create_table_if_not_exists = 'true' | 'false', connect_timeout_ms (5000), query_timeout_ms
//     (60000): the deadlines of every connection and every query.

import { SqlError, SqlState } from '../../../sql/errors.js';

export interface PostgresSinkOptions {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  readonly schema: string;
  readonly table: string;
  readonly type: 'upsert' | 'append-only';
  readonly createTable: boolean;
  readonly connectTimeoutMs: number;
  readonly queryTimeoutMs: number;
}

function bad(message: string, hint?: string): SqlError {
  return new SqlError(SqlState.invalidParameterValue, message, hint === undefined ? {} : { hint });
}

function required(options: Readonly<Record<string, string>>, names: readonly string[], connector: string): string {
  for (const name of names) {
    const value = options[name];
    if (value !== undefined && value !== '') return value;
  }
  throw bad(`a ${connector} sink needs the option "${names[0]}"`);
}

function positiveInteger(text: string | undefined, name: string, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text.trim()) || Number(text) <= 0) throw bad(`invalid value for "${name}": "${text}"`, 'A positive integer.');
  return Number(text);
}

/** Whether a sink's connector is PostgreSQL ('postgres' or 'jdbc'). */
export function isPostgresSink(options: Readonly<Record<string, string>> | undefined): boolean {
  const connector = (options?.['connector'] ?? '').toLowerCase();
  return connector === 'postgres' || connector === 'jdbc';
}

export function postgresSinkOptions(options: Readonly<Record<string, string>>): PostgresSinkOptions {
  const connector = (options['connector'] ?? '').toLowerCase();
  let host: string;
  let port = 5432;
  let database: string;
  let user = options['user'];
  let password = options['password'];
  if (connector === 'jdbc') {
    const url = required(options, ['jdbc.url'], 'jdbc');
    const match = /^jdbc:postgresql:\/\/([^/:?]+|\[[^\]]+\])(?::(\d+))?\/([^?]+)(?:\?(.*))?$/.exec(url);
    if (match === null) throw bad(`invalid value for "jdbc.url": "${url}"`, "jdbc:postgresql://host:port/database?user=...&password=... (oxbow's jdbc sink writes to PostgreSQL).");
    host = match[1]!.replace(/^\[|\]$/g, '');
    if (match[2] !== undefined) port = Number(match[2]);
    database = decodeURIComponent(match[3]!);
    const parameters = new URLSearchParams(match[4] ?? '');
    user = parameters.get('user') ?? user;
    password = parameters.get('password') ?? password;
  } else {
    host = required(options, ['hostname', 'host'], 'postgres');
    port = positiveInteger(options['port'], 'port', 5432);
    database = required(options, ['database'], 'postgres');
  }
  if (user === undefined || user === '') throw bad(`a ${connector} sink needs the option "user"`);
  if (port > 65535) throw bad(`invalid value for "port": "${port}"`);
  const table = required(options, connector === 'jdbc' ? ['table.name', 'table'] : ['table', 'table.name'], connector);
  const schema = options['schema.name'] ?? options['schema'] ?? 'public';
  const type = (options['type'] ?? 'upsert').toLowerCase();
  if (type !== 'upsert' && type !== 'append-only') throw bad(`invalid value for "type": "${options['type']}"`, "type = 'upsert' or 'append-only'.");
  const create = (options['create_table_if_not_exists'] ?? 'false').toLowerCase();
  if (create !== 'true' && create !== 'false') throw bad(`invalid value for "create_table_if_not_exists": "${options['create_table_if_not_exists']}"`, "'true' or 'false'.");
  return {
    host,
    port,
    user,
    password: password ?? '',
    database,
    schema,
    table,
    type,
    createTable: create === 'true',
    connectTimeoutMs: positiveInteger(options['connect_timeout_ms'], 'connect_timeout_ms', 5000),
    queryTimeoutMs: positiveInteger(options['query_timeout_ms'], 'query_timeout_ms', 60_000),
  };
}

/** WITH options as catalogs show them: a `password` option and a password in `jdbc.url` masked. */
export function shownOptions(options: Readonly<Record<string, string>>): Record<string, string> {
  const shown: Record<string, string> = { ...options };
  if (shown['password'] !== undefined) shown['password'] = '********';
  const url = shown['jdbc.url'];
  if (url !== undefined) shown['jdbc.url'] = url.replace(/([?&]password=)[^&]*/i, '$1********');
  return shown;
}
