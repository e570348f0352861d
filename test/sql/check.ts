// The shared comparison step of the function differential tests: evaluate a call with oxbow
// (evaluate.ts) and with PostgreSQL on the same argument rows, in a given session time zone.
import { expect } from 'vitest';
import type { PostgresServer } from '../support/postgres.js';
import { DEFAULT_EVAL_CONTEXT, type EvalContext } from '../../sql/functions.js';
import type { DataType } from '../../sql/types.js';
import { mismatches, theirsRows } from './differential.js';
import { evaluate, type Call } from './evaluate.js';

const sqlNames: Record<string, string> = {
  int2: 'int2', int4: 'int4', int8: 'int8', float4: 'float4', float8: 'float8', numeric: 'numeric', text: 'text', bool: 'bool',
  date: 'date', time: 'time', timestamp: 'timestamp', timestamptz: 'timestamptz', interval: 'interval', jsonb: 'jsonb', bytea: 'bytea',
};
function sqlName(t: DataType): string {
  return t.name === 'array' ? `${sqlName(t.element!)}[]` : sqlNames[t.name] ?? t.name;
}

/** Compares a call on many argument rows. `sql` overrides the PostgreSQL expression ($1.. are the arguments, already cast). */
export async function check(server: PostgresServer, call: Call, rows: (string | null)[][], options: { sql?: string; timeZone?: string } = {}): Promise<void> {
  const timeZone = options.timeZone ?? 'UTC';
  await server.query(`SET TimeZone = '${timeZone}'`);
  const context: EvalContext = { ...DEFAULT_EVAL_CONTEXT, timeZone, statementTimeMicros: 1_700_000_000_000_000 };
  const casted = call.types.map((t, i) => `$${i + 1}::${sqlName(t)}`);
  let expression: string;
  if (options.sql !== undefined) {
    expression = options.sql;
    for (let i = casted.length; i >= 1; i--) expression = expression.replaceAll(`$${i}`, `(${casted[i - 1]})`);
  } else if (call.operator) {
    expression = casted.length === 1 ? `${call.name} (${casted[0]})` : `(${casted[0]}) ${call.name} (${casted[1]})`;
  } else {
    expression = `${call.name}(${casted.join(', ')})`;
  }
  const mine = rows.map((row) => evaluate(call, row, context));
  const reference = await theirsRows(server, expression, rows);
  const labelled = rows.map((row) => `${call.name}(${row.map((value) => (value === null ? 'NULL' : value)).join(', ')})`);
  expect(mismatches(labelled, mine, reference)).toEqual([]);
}

