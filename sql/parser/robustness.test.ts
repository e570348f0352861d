// Whatever the input, parse() either returns statements or throws a SqlError (never another
// exception, never a hang): random text, random token soups built from the words oxbow's extension
// layer reacts to, and valid statements cut at random points.
import fc from 'fast-check';
import { beforeAll, expect, it } from 'vitest';
import { SqlError } from '../errors.js';
import { initParser, parse } from './index.js';

beforeAll(async () => {
  await initParser();
});

function parsesOrSqlError(sql: string): void {
  try {
    parse(sql);
  } catch (error) {
    if (!(error instanceof SqlError)) throw new Error(`non-SqlError for ${JSON.stringify(sql)}: ${String(error)}`);
    expect(['42601', '22021']).toContain(error.code);
    expect(error.position === undefined || (error.position >= 1 && error.position <= [...sql].length + 1), JSON.stringify(sql)).toBe(true);
  }
}

const words = [
  'CREATE', 'SOURCE', 'SINK', 'TABLE', 'MATERIALIZED', 'VIEW', 'AS', 'SELECT', 'FROM', 'WHERE', 'FOR', 'SYSTEM_TIME',
  'OF', 'BETWEEN', 'AND', 'WITH', 'FORMAT', 'ENCODE', 'PLAIN', 'JSON', 'INCLUDE', 'KEY', 'APPEND', 'ONLY', 'EMIT',
  'ON', 'WINDOW', 'CLOSE', 'WATERMARK', 'STRUCT', '<', '>', '>>', '(', ')', ',', ';', '.', '=', "'x'", '1', 't',
  'connector', 'a.b.c', 'FLUSH', 'DROP', 'IF', 'NOT', 'EXISTS', 'now()', 'interval', "'5'", 'SECOND', 'BEGIN',
  'ATOMIC', 'END', 'CASE', '$$', '"q"', '--', '/*', '*/', 'é', '😀', 'PRIMARY', 'int', 'JOIN', 'PROCTIME()',
];

const samples = [
  "CREATE SOURCE s (a int, b STRUCT<x int, y STRUCT<z int>>, ts timestamp AS now(), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) INCLUDE key AS k WITH (connector = 'kafka', a.b.c = 'x') FORMAT PLAIN ENCODE JSON (p.q = 1)",
  "CREATE SINK s AS SELECT * FROM t FOR SYSTEM_TIME AS OF now() - '5' second AS x WITH (connector = 'blackhole') FORMAT UPSERT ENCODE JSON",
  "SELECT * FROM a FOR SYSTEM_TIME BETWEEN now() AND now() JOIN b FOR SYSTEM_TIME AS OF PROCTIME() s ON a.k = s.k EMIT ON WINDOW CLOSE",
  "CREATE TABLE t (a int, b int,) APPEND ONLY WITH (connector = 'x', retention = '1 day') FORMAT UPSERT ENCODE JSON; FLUSH; DROP SINK IF EXISTS s CASCADE",
];

it('random text', () => {
  fc.assert(fc.property(fc.string({ maxLength: 80 }), parsesOrSqlError), { numRuns: 500 });
});

it('random token soups', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...words), { maxLength: 25 }), (tokens) => parsesOrSqlError(tokens.join(' '))),
    { numRuns: 3000 },
  );
});

it('extension statements cut or spliced at random points', () => {
  fc.assert(
    fc.property(fc.constantFrom(...samples), fc.nat(), fc.nat(), fc.constantFrom(...words), (sample, cut, at, word) => {
      parsesOrSqlError(sample.slice(0, cut % (sample.length + 1)));
      const position = at % (sample.length + 1);
      parsesOrSqlError(`${sample.slice(0, position)} ${word} ${sample.slice(position)}`);
    }),
    { numRuns: 3000 },
  );
});

it('the samples themselves parse', () => {
  for (const sample of samples) expect(parse(sample).length).toBeGreaterThan(0);
});

it('deep trees: a 5,000-term expression parses; deeper ones fail cleanly and the parser keeps working', () => {
  const terms = 5_000;
  const chain = parse(`select ${Array.from({ length: terms }, () => '1').join(' + ')} from t for system_time as of now()`);
  // The leftmost operand sits 4,999 levels down; its location is still mapped (0-based offset of the first "1").
  let node = (chain[0]!.node as Record<string, any>)['SelectStmt'].targetList[0].ResTarget.val; // eslint-disable-line @typescript-eslint/no-explicit-any
  let depth = 0;
  while (node.A_Expr !== undefined) {
    node = node.A_Expr.lexpr;
    depth++;
  }
  expect(depth).toBe(terms - 1);
  expect(node.A_Const.location).toBe('select '.length);
  // Too deep for the WebAssembly parser's stack: 54001, as PostgreSQL's "stack depth limit exceeded".
  let thrown: unknown;
  try {
    parse(`select ${Array.from({ length: 100_000 }, () => '1').join(' + ')}`);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(SqlError);
  expect((thrown as SqlError).code).toBe('54001');
  // Nested parentheses beyond the grammar's stack: PostgreSQL's own "memory exhausted" syntax error.
  const nested = `select ${'('.repeat(100_000)}1${')'.repeat(100_000)}`;
  expect(() => parse(nested)).toThrow('memory exhausted');
  expect(parse('select 1')).toHaveLength(1);
});

it('rejects a NUL character (which would silently end the text PostgreSQL grammar reads)', () => {
  let thrown: unknown;
  try {
    parse('select 1 where false\0 or true');
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(SqlError);
  expect((thrown as SqlError).code).toBe('22021');
  expect((thrown as SqlError).position).toBe('select 1 where false'.length + 1);
});

it('multi-statement input with multi-byte comments: trees and locations equal PostgreSQL grammar on the whole text', async () => {
  const { readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { parseSync } = await import('libpg-query');
  const fixture = readFileSync(join(import.meta.dirname, 'fixtures', 'pg-dump-queries.sql'), 'utf8');
  const queries = fixture
    .split(/^-- pg_dump$/m)
    .map((block) => block.trim().replace(/;$/, ''))
    .filter((block) => block !== '');
  // Multi-byte characters inside statements too (each fed to the grammar on its own).
  queries.push(
    "SELECT 'é😀' AS \"naïve\", 1 + /* ü */ 2 FROM t WHERE y = 'ñ' AND z = E'\\u00e9'",
    "INSERT INTO \"tâble\" VALUES ('∑', $$ü$$, 3) RETURNING *",
    "CREATE VIEW v AS SELECT '😀😀' || c AS x FROM t ORDER BY c DESC NULLS LAST",
  );
  const separators = [';', ';\n', ' ;  ', ';/* é😀 */', ';\n-- ü comment\n', ';\t/* nested /* ∑ */ */ '];
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom(...queries), fc.constantFrom(...separators)), { minLength: 1, maxLength: 4 }), fc.constantFrom('', '  ', '/* ä */ '), (parts, lead) => {
      const sql = lead + parts.map(([query, separator]) => query + separator).join('');
      const ours = parse(sql).map((statement) => statement.node);
      // libpg-query's locations are UTF-8 byte offsets of the whole text: convert them to characters.
      const byteToChar: number[] = [];
      for (let index = 0; index < sql.length; index++) {
        const code = sql.codePointAt(index)!;
        const width = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
        for (let k = 0; k < width; k++) byteToChar.push(index);
        if (code >= 0x10000) index++;
      }
      const raw = JSON.parse(JSON.stringify((parseSync(sql) as { stmts: { stmt: unknown }[] }).stmts.map((statement) => statement.stmt)), (key, value) =>
        key === 'location' && typeof value === 'number' && value >= 0 ? byteToChar[value] : value,
      );
      const withoutZero = JSON.parse(JSON.stringify(ours), (key, value) => (key === 'location' && value === 0 ? undefined : value));
      expect(withoutZero).toEqual(raw);
    }),
    { numRuns: 200 },
  );
});
