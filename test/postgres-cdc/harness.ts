// Shared pieces of the postgres-cdc tests: a PostgreSQL 15 cluster with wal_level = logical whose
// user `cdc` (REPLICATION, password, SCRAM-SHA-256) owns the upstream tables, and the comparison
// of an oxbow table with its upstream table (both read as PostgreSQL text).

import pg from 'pg';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

export const CDC_PASSWORD = 'cdc-secret';

/** Values as the server printed them. */
export const RAW_TYPES = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

export async function startUpstream(): Promise<PostgresServer> {
  const server = await startPostgres({
    logical: true,
    hba: 'host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\nlocal all all trust\n',
    settings: { max_connections: '40', wal_sender_timeout: '10s' },
  });
  await server.query(`CREATE ROLE cdc LOGIN REPLICATION PASSWORD '${CDC_PASSWORD}'`);
  await server.query('CREATE DATABASE shop OWNER cdc');
  return server;
}

/** A client of the upstream database `shop` as user cdc. */
export async function shopClient(server: PostgresServer): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'cdc', password: CDC_PASSWORD, database: 'shop', types: { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

export function withOptions(server: PostgresServer, table: string, extra = ''): string {
  return `WITH (connector = 'postgres-cdc', hostname = '127.0.0.1', port = '${server.port}', username = 'cdc', password = '${CDC_PASSWORD}',
    database.name = 'shop', schema.name = 'public', table.name = '${table}'${extra})`;
}

/** Rows as text lines, sorted. */
export async function textRows(client: pg.Client, sql: string): Promise<string[]> {
  const result = await client.query({ text: sql, rowMode: 'array', types: RAW_TYPES });
  return (result.rows as unknown[][]).map((row) => row.map((value) => (value === null ? 'NULL' : String(value))).join(' | ')).sort();
}
