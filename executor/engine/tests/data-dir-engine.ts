// The set-up of the tests that reopen an engine on one data directory (restart, the SQL functions'
// restart): a temporary data directory removed after the file's tests, an engine on RocksDB there
// with file checkpoints beside it, and the rows of a statement run in its session.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { createEngine } from '../create-engine.js';
import type { Engine, Session } from '../engine.js';
import type { Row } from '../../../sql/value.js';

/** A temporary data directory named `prefix...`, removed after the file's tests. */
export function temporaryDataDir(prefix: string): string {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

/** An engine on `dataDir` checkpointing to `dataDir/checkpoints` every `checkpointIntervalMs`, and a session. */
export async function openOnDataDir(dataDir: string, checkpointIntervalMs: number): Promise<{ engine: Engine; session: Session }> {
  const engine = await createEngine({
    dataDir,
    checkpointUrl: `file://${dataDir}/checkpoints`,
    barrierIntervalMs: 1000,
    checkpointIntervalMs,
    timeTravelRetentionMs: 600_000,
    memoryLimitBytes: 1 << 26,
  });
  const session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
  return { engine, session };
}

/** The rows of the last statement of `sql` (none when it returns no rows). */
export async function runRows(session: Session, sql: string): Promise<Row[]> {
  let rows: Row[] = [];
  for (const statement of session.prepareMany(sql)) {
    const result = await session.execute(statement, { parameters: [] });
    rows = result.kind === 'rows' ? await result.cursor.next(0) : [];
  }
  return rows;
}
