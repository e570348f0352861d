// Fills in the expectations of an slt file from a real PostgreSQL: the oracle, never oxbow. For the
// files under test/slt/postgres/ (plain PostgreSQL SQL that oxbow must answer exactly as PostgreSQL
// does), `UPDATE=1 npx vitest run test/slt/postgres-oracle.test.ts` rewrites, record by record:
//   - each `query`'s result block (`----` and the rows, as the runner formats them);
//   - each bare `statement error` / `query error` (no expectation written) to `... error SQLSTATE XXXXX`.
// Everything else in the file (comments, SQL, sort modes, hand-written expectations) is kept. The
// SQL runs in file order on one connection, so later records see earlier effects.

import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { parseSlt } from './slt-file.js';

const rawTypes = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

function formatRow(row: unknown[]): string {
  return row.map((value) => (value === null || value === undefined ? 'NULL' : String(value) === '' ? '(empty)' : String(value))).join(' ');
}

/** Rewrites `path` with PostgreSQL's answers; returns the new text (also written when `write`). */
export async function completeFromPostgres(path: string, url: string, write: boolean): Promise<string> {
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  const records = parseSlt(text, path);
  const client = new pg.Client({ connectionString: url, types: rawTypes });
  await client.connect();
  // Replacements by 0-based line: [first line, line count to replace, new lines].
  const edits: { from: number; count: number; lines: string[] }[] = [];
  try {
    for (const record of records) {
      if (record.kind !== 'statement' && record.kind !== 'query' && record.kind !== 'queryError') continue;
      const header = record.line - 1;
      const sqlLineCount = record.sql.split('\n').length;
      let outcome: { ok: true; rows: unknown[][] } | { ok: false; code: string };
      try {
        const result = (await client.query({ text: record.sql, rowMode: 'array' })) as pg.QueryResult | pg.QueryResult[];
        const last = Array.isArray(result) ? ([...result].reverse().find((part) => (part.fields?.length ?? 0) > 0) ?? result[result.length - 1]!) : result;
        outcome = { ok: true, rows: (last.rows ?? []) as unknown as unknown[][] };
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (typeof code !== 'string') throw error;
        outcome = { ok: false, code };
      }
      const headerText = lines[header]!;
      if (record.kind === 'query') {
        if (!outcome.ok) throw new Error(`${path}:${record.line}: PostgreSQL rejects a query record (SQLSTATE ${outcome.code}); make it "query error"`);
        // The old result block: `----` and rows up to the next blank line.
        let end = header + 1 + sqlLineCount;
        if (lines[end]?.trim() === '----') {
          end++;
          while (end < lines.length && lines[end]!.trim() !== '') end++;
        }
        edits.push({ from: header + 1 + sqlLineCount, count: end - (header + 1 + sqlLineCount), lines: ['----', ...outcome.rows.map(formatRow)] });
      } else if (/^(statement|query)\s+error\s*$/.test(headerText.trim())) {
        if (outcome.ok) throw new Error(`${path}:${record.line}: PostgreSQL accepts a record expected to fail`);
        edits.push({ from: header, count: 1, lines: [`${headerText.trim()} SQLSTATE ${outcome.code}`] });
      } else if (record.kind === 'statement' && record.expect.kind !== 'error' && !outcome.ok) {
        throw new Error(`${path}:${record.line}: PostgreSQL fails a "statement ok" record (SQLSTATE ${outcome.code})`);
      }
    }
  } finally {
    await client.end();
  }
  for (const edit of edits.sort((a, b) => b.from - a.from)) lines.splice(edit.from, edit.count, ...edit.lines);
  const updated = lines.join('\n');
  if (write && updated !== text) writeFileSync(path, updated);
  return updated;
}
