// Runs SQL text through the real parser, planner and batch executor over a MemoryDatabase.

import { initParser, parse } from '../../../sql/parser/index.js';
import { DEFAULT_EVAL_CONTEXT, formatValue } from '../../../sql/functions.js';
import type { DataType } from '../../../sql/types.js';
import type { Value } from '../../../sql/value.js';
import { planStatement, type PlannedStatement } from '../../../planner/index.js';
import { executePlanned, type ExecuteResult } from '../index.js';
import type { MemoryDatabase } from './memory-tables.js';

export async function ready(): Promise<void> {
  await initParser();
}

export function plan(database: MemoryDatabase, sql: string, parameterTypes: readonly (DataType | undefined)[] = []): PlannedStatement {
  const [statement] = parse(sql);
  return planStatement(statement!, { catalog: database, searchPath: ['public'], parameterTypes });
}

export async function run(database: MemoryDatabase, sql: string, parameters: readonly Value[] = []): Promise<ExecuteResult & { planned: PlannedStatement }> {
  const planned = plan(database, sql);
  const result = await executePlanned(planned, {
    tables: database,
    parameters,
    evalContext: { ...DEFAULT_EVAL_CONTEXT, statementTimeMicros: 1_700_000_000_000_000 },
    signal: new AbortController().signal,
  });
  return { ...result, planned };
}

/** Runs once; the result rows as PostgreSQL's text output (NULL as null) with the command's row count. */
export async function runText(database: MemoryDatabase, sql: string, parameters: readonly Value[] = []): Promise<{ rows: (string | null)[][]; rowCount: number }> {
  const result = await run(database, sql, parameters);
  const columns = result.planned.columns ?? [];
  return { rows: result.rows.map((row) => row.map((value, i) => (value === null ? null : formatValue(value, columns[i]!.type)))), rowCount: result.rowCount };
}

/** Result rows as PostgreSQL's text output (NULL as null), for comparisons written by hand. */
export async function text(database: MemoryDatabase, sql: string, parameters: readonly Value[] = []): Promise<(string | null)[][]> {
  return (await runText(database, sql, parameters)).rows;
}
