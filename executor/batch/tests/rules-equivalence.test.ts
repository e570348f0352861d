// The optimizer must not change answers: random tables and queries (query-generator.ts) are run
// twice on the batch executor, once through every optimizer rule and once with the bound plan
// taken straight to the physical stage, and the results must be the same multiset of rows (or the
// same SQLSTATE). No PostgreSQL needed, so it runs many queries quickly. RULES_SEEDS=n for more.

import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from '../../../sql/parser/index.js';
import { DEFAULT_EVAL_CONTEXT, formatValue } from '../../../sql/functions.js';
import { type as scalar, type DataType } from '../../../sql/types.js';
import { SqlError } from '../../../sql/errors.js';
import type { Node } from '@pgsql/types';
import type { PlannedStatement } from '../../../planner/index.js';
import { BinderContext } from '../../../planner/binder/context.js';
import { planToStage } from '../../../planner/stages.js';
import { toPhysical } from '../../../planner/physical.js';
import { executePlanned } from '../index.js';
import { MemoryDatabase } from './memory-tables.js';
import { ready, run } from './harness.js';
import { Random, createStatements, generateQueries, generateTables } from './query-generator.js';

beforeAll(ready);

async function outcome(db: MemoryDatabase, sql: string, optimized: boolean): Promise<string> {
  try {
    const binder = new BinderContext({ catalog: db, searchPath: ['public'], parameterTypes: [] });
    const node = parse(sql)[0]!.node as Node;
    const bound = optimized ? planToStage(node, binder, 'physical') : planToStage(node, binder, 'logical');
    const plan = optimized ? bound.plan : toPhysical(bound.plan);
    const planned: PlannedStatement = { kind: 'query', columns: bound.columns, parameterTypes: [], plan };
    const result = await executePlanned(planned, { tables: db, parameters: [], evalContext: DEFAULT_EVAL_CONTEXT, signal: new AbortController().signal });
    const types = plan.columns.map((c) => c.type);
    return JSON.stringify(result.rows.map((row) => JSON.stringify(row.map((v, i) => (v === null ? null : formatValue(v, types[i]!))))).sort());
  } catch (error) {
    if (error instanceof SqlError) return `error ${error.code}`;
    throw error;
  }
}

describe('optimizer rules preserve results', () => {
  it('optimized and unoptimized plans agree on random queries', async () => {
    const seeds = Number(process.env.RULES_SEEDS ?? 15);
    const base = Number(process.env.RULES_BASE_SEED ?? Date.now() % 1_000_000);
    const mismatches: string[] = [];
    for (let seed = base; seed < base + seeds; seed++) {
      const random = new Random(seed);
      const tables = generateTables(random);
      const db = new MemoryDatabase();
      for (const table of tables) {
        db.createTable(table.name, table.columns.map((c, i) => ({ name: c.name, type: scalar(c.type) as DataType, nullable: i !== 0 })), ['id']);
        const insert = createStatements(table)[1];
        if (insert !== undefined) await run(db, insert);
      }
      for (const sql of generateQueries(random, tables, 40)) {
        const optimized = await outcome(db, sql, true);
        const plain = await outcome(db, sql, false);
        if (optimized !== plain) mismatches.push(`seed ${seed}: ${sql}\n  optimized:   ${optimized.slice(0, 300)}\n  unoptimized: ${plain.slice(0, 300)}`);
      }
    }
    expect(mismatches).toEqual([]);
  });
});
