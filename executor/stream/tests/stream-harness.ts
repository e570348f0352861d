// Test helpers: an engine over the in-memory state store (or a given store), one session, and
// `run(sql)` returning the last statement's rows as text (PostgreSQL's output format) or its tag.

import { createMemoryStateStore } from '../../../storage/memory-state-store.js';
import type { StateStore } from '../../../storage/state-table.js';
import { openEngine, type OxbowEngine } from '../../open-engine.js';
import type { Session } from '../../engine.js';
import type { Row } from '../../../sql/value.js';
import { formatValue } from '../../../sql/functions.js';

export interface Harness {
  readonly engine: OxbowEngine;
  readonly session: Session;
  run(sql: string): Promise<{ rows: Row[]; tag: string }>;
  /** The rows of a query as sorted text lines (`a | b`), NULL as `NULL`. */
  lines(sql: string): Promise<string[]>;
  close(): Promise<void>;
}

export async function openHarness(store: StateStore = createMemoryStateStore()): Promise<Harness> {
  const engine = await openEngine(store, { dataDir: '', timeTravelRetentionMs: 600_000, memoryLimitBytes: 1 << 26 });
  const session = engine.openSession({ user: 'oxbow', database: 'oxbow', options: {} }, { notice: () => undefined, parameterStatus: () => undefined });
  const run = async (sql: string) => {
    let last: { rows: Row[]; tag: string } = { rows: [], tag: '' };
    for (const statement of session.prepareMany(sql)) {
      const result = await session.execute(statement, { parameters: [] });
      if (result.kind === 'rows') {
        const rows = await result.cursor.next(0);
        const texts = rows.map((row) => row.map((value, i) => (value === null ? null : formatValue(value, result.columns[i]!.type))));
        last = { rows: texts, tag: result.commandTag(rows.length) };
      } else if (result.kind === 'command') last = { rows: [], tag: result.commandTag };
    }
    return last;
  };
  return {
    engine,
    session,
    run,
    lines: async (sql) => (await run(sql)).rows.map((row) => row.map((value) => (value === null ? 'NULL' : String(value))).join(' | ')).sort(),
    close: () => engine.close(),
  };
}
