// The files under test/slt/postgres/ hold plain PostgreSQL SQL whose expectations come from a real
// PostgreSQL 15 (the oracle): this test checks each file still passes on PostgreSQL, record by
// record; with UPDATE=1 it first regenerates the expectations from PostgreSQL (see
// postgres-oracle.ts; review the diff like code). slt.test.ts runs the same files against oxbow.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { completeFromPostgres } from './postgres-oracle.js';
import { describeFailures, runSltFile } from './runner.js';

const folder = join(import.meta.dirname, 'postgres');
const files = readdirSync(folder).filter((name) => name.endsWith('.slt')).sort();
let server: PostgresServer;

beforeAll(async () => {
  server = await startPostgres();
});

afterAll(async () => {
  await server?.stop();
});

describe('test/slt/postgres files pass on PostgreSQL 15', () => {
  it('has files', () => {
    expect(files.length).toBeGreaterThan(0);
  });
  for (const name of files) {
    it(name, async () => {
      const path = join(folder, name);
      // Each file gets a fresh database so files cannot see each other's objects.
      const database = `slt_${name.replace(/\W/g, '_')}`;
      await server.query(`DROP DATABASE IF EXISTS ${database}`);
      await server.query(`CREATE DATABASE ${database}`);
      const url = server.url.replace(/\/postgres$/, `/${database}`);
      if (process.env['UPDATE'] === '1') await completeFromPostgres(path, url, true);
      await server.query(`DROP DATABASE ${database}`);
      await server.query(`CREATE DATABASE ${database}`);
      const result = await runSltFile(path, { url, engines: ['postgres'] });
      expect(describeFailures(result)).toBe('');
      expect(result.passed).toBe(result.records);
    });
  }
});
