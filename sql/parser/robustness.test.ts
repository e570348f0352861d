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
