// Helpers for differential tests of the sql/ value library against a real PostgreSQL 15: run the
// same inputs through oxbow's implementation and through PostgreSQL, and compare the outcomes
// (text output byte for byte, or the error's SQLSTATE and message).
import { SqlError } from '../../sql/errors.js';
import type { PostgresServer } from '../support/postgres.js';

export type Outcome = { text: string | null } | { code: string; message: string };

/** Runs `compute` and captures a SqlError as an outcome. */
export function ours(compute: () => string | null): Outcome {
  try {
    return { text: compute() };
  } catch (error) {
    if (error instanceof SqlError) return { code: error.code, message: error.message };
    throw error;
  }
}

/**
 * PostgreSQL's outcome of `expression` for each input, where `$x` in the expression stands for
 * the input as a text value. Inputs go in batches; a batch that fails is retried row by row so
 * each input gets its own error.
 */
export async function theirs(server: PostgresServer, expression: string, inputs: readonly (string | null)[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const batchSize = 500;
  for (let start = 0; start < inputs.length; start += batchSize) {
    const batch = inputs.slice(start, start + batchSize);
    const sql = `SELECT ${expression.replaceAll('$x', 'u.x')} FROM unnest($1::text[]) WITH ORDINALITY AS u(x, n) ORDER BY u.n`;
    const result = await server.tryQuery(sql, [batch]);
    if (result.ok) {
      for (const row of result.rows) outcomes.push({ text: row[0] ?? null });
      continue;
    }
    for (const input of batch) {
      const single = await server.tryQuery(`SELECT ${expression.replaceAll('$x', '$1::text')}`, [input]);
      outcomes.push(single.ok ? { text: single.rows[0]![0] ?? null } : { code: single.code, message: single.message });
    }
  }
  return outcomes;
}

/** Pairs of [input, ours, theirs] that differ. */
export function mismatches(inputs: readonly (string | null)[], mine: readonly Outcome[], reference: readonly Outcome[]): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < inputs.length; i++) {
    if (JSON.stringify(mine[i]) !== JSON.stringify(reference[i])) out.push({ input: inputs[i], ours: mine[i], postgres: reference[i] });
  }
  return out;
}

/**
 * PostgreSQL's outcome of `expression` for each row of arguments, where `$1`, `$2`... in the
 * expression stand for the row's arguments as text. Batched; a failing batch is retried row by row.
 */
export async function theirsRows(server: PostgresServer, expression: string, rows: readonly (readonly (string | null)[])[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const width = rows[0]?.length ?? 0;
  const batchSize = 400;
  for (let start = 0; start < rows.length; start += batchSize) {
    const batch = rows.slice(start, start + batchSize);
    const columns = Array.from({ length: width }, (_, i) => batch.map((row) => row[i] ?? null));
    let body = expression;
    for (let i = width; i >= 1; i--) body = body.replaceAll(`$${i}`, `u.a${i}`);
    const names = Array.from({ length: width }, (_, i) => `a${i + 1}`).join(', ');
    const arrays = Array.from({ length: width }, (_, i) => `$${i + 1}::text[]`).join(', ');
    const sql = width === 0
      ? `SELECT ${expression} FROM generate_series(1, ${batch.length})`
      : `SELECT ${body} FROM unnest(${arrays}) WITH ORDINALITY AS u(${names}, n) ORDER BY u.n`;
    const result = await server.tryQuery(sql, columns);
    if (result.ok) {
      for (const row of result.rows) outcomes.push({ text: row[0] ?? null });
      continue;
    }
    for (const row of batch) {
      let single = expression;
      for (let i = width; i >= 1; i--) single = single.replaceAll(`$${i}`, `$${i}::text`);
      const outcome = await server.tryQuery(`SELECT ${single}`, [...row]);
      outcomes.push(outcome.ok ? { text: outcome.rows[0]![0] ?? null } : { code: outcome.code, message: outcome.message });
    }
  }
  return outcomes;
}
