// The setup the s3rver-backed checkpoint suites share: one s3rver for the file (started before its
// tests, disposed after them), a scratch folder removed at the end, a client connection to an
// oxbow server that the test may SIGKILL (its socket errors are expected, not failures), and the
// rows of their table t (id, v) as a map to compare with the model.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { startS3rver, type S3rverProcess } from './s3rver.js';

export interface S3rverSuite {
  /** The running s3rver (from beforeAll on). */
  readonly s3rver: S3rverProcess;
  /** A scratch folder for this file, removed after its tests. */
  readonly work: string;
}

/** Registers the file's beforeAll / afterAll: s3rver up for its tests, the scratch folder `prefix*` gone after. */
export function s3rverSuite(prefix: string): S3rverSuite {
  const work = mkdtempSync(join(tmpdir(), prefix));
  let s3rver: S3rverProcess | undefined;
  beforeAll(async () => {
    s3rver = await startS3rver();
  });
  afterAll(async () => {
    await s3rver?.dispose();
    rmSync(work, { recursive: true, force: true });
  });
  return {
    get s3rver(): S3rverProcess {
      if (s3rver === undefined) throw new Error('s3rver is not started yet (use it inside a test)');
      return s3rver;
    },
    work,
  };
}

/** A `pg` client of a server the test kills: errors on its socket after the kill are ignored. */
/** The rows of table t (id int, v int8) as id -> v. */
export async function tableRows(client: pg.Client): Promise<Map<number, number>> {
  const result = await client.query<{ id: number; v: string }>('select id, v from t');
  return new Map(result.rows.map((row) => [row.id, Number(row.v)]));
}
