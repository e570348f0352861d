// The parser's entry points. `initParser()` loads PostgreSQL's grammar (WebAssembly) once;
// `parse(sql)` splits the input into statements and parses each: oxbow's own statements (FLUSH,
// CREATE SOURCE / SINK, DROP and ALTER of sources and sinks, RisingWave's SHOW forms, DESCRIBE) by
// the extension layer, everything else by PostgreSQL's grammar with oxbow's clauses taken out and
// attached (see README.md). Syntax errors are SqlError 42601 with PostgreSQL's wording and the
// 1-based character position in the whole input, as the server reports them for a multi-statement
// query string.

import type { Node, ParsedStatement } from './ast.js';
import { parseCreateSink } from './create-sink.js';
import { parseCreateSource } from './create-source.js';
import { parseDropSourceOrSink } from './drop-source-sink.js';
import { parseExpressionRange } from './expression.js';
import { SqlError, SqlState } from '../errors.js';
import { grammarReady, loadGrammar, postgresPosition } from './postgres-grammar.js';
import { parsePostgresStatement, type StatementSlice } from './postgres-statement.js';
import { parseShowOrDescribe } from './show-describe.js';
import { parseExplainAnalyzeView } from './explain-analyze.js';
import { parseSubscribe, parseSubscriptionCursor, parseSubscriptionDdl } from './subscribe.js';
import { splitStatements } from './statement-split.js';
import { syntaxErrorAt } from './syntax.js';
import { isWord, tokenize, type Token } from './tokenizer.js';

export type { ParsedStatement } from './ast.js';

/** Loads the WebAssembly grammar; call once at start (later calls are free). */
export function initParser(): Promise<void> {
  return loadGrammar();
}

function assertReady(): void {
  if (!grammarReady()) throw new Error('oxbow internal assertion: await initParser() before parse()');
}

/** Index of the SOURCE / SINK word of `CREATE [OR REPLACE] SOURCE|SINK`, or -1. */
function createWordIndex(tokens: readonly Token[], first: number, word: string): number {
  if (!isWord(tokens[first], 'CREATE')) return -1;
  let index = first + 1;
  if (isWord(tokens[index], 'OR') && isWord(tokens[index + 1], 'REPLACE')) index += 2;
  return isWord(tokens[index], word) ? index : -1;
}

function parseOne(slice: StatementSlice): ParsedStatement['node'] {
  const { tokens, first, end } = slice;
  if (isWord(tokens[first], 'FLUSH')) {
    if (end - first > 1) throw syntaxErrorAt(slice.source, tokens, first + 1);
    return { OxbowFlush: {} };
  }
  const sourceWord = createWordIndex(tokens, first, 'SOURCE');
  if (sourceWord >= 0) return parseCreateSource(slice, sourceWord);
  const sinkWord = createWordIndex(tokens, first, 'SINK');
  if (sinkWord >= 0) return parseCreateSink(slice, sinkWord);
  const drop = parseDropSourceOrSink(slice);
  if (drop !== undefined) return drop;
  const show = parseShowOrDescribe(slice);
  if (show !== undefined) return show;
  const subscribe = parseSubscribe(slice) ?? parseSubscriptionDdl(slice) ?? parseSubscriptionCursor(slice);
  if (subscribe !== undefined) return subscribe;
  const explainView = parseExplainAnalyzeView(slice);
  if (explainView !== undefined) return explainView;
  return parsePostgresStatement(slice).node;
}

/**
 * Parses `sql` into its statements (empty input: none). Throws SqlError: 42601 on a syntax error,
 * 54001 for a statement nested too deeply, 22021 for a NUL character.
 */
export function parse(sql: string): ParsedStatement[] {
  assertReady();
  // PostgreSQL's grammar reads a C string: a NUL would silently end the statement early.
  const nul = sql.indexOf('\0');
  if (nul >= 0) {
    throw new SqlError(SqlState.characterNotInRepertoire, 'invalid byte sequence for encoding "UTF8": 0x00', { position: postgresPosition(sql, nul) });
  }
  const tokens = tokenize(sql);
  const statements: ParsedStatement[] = [];
  for (const range of splitStatements(tokens)) {
    const firstToken = tokens[range.firstToken]!;
    const lastToken = tokens[range.endToken - 1]!;
    // The grammar sees the statement through its semicolon (so `select 1 +;` fails at ";" as in
    // PostgreSQL), or through the end of the input for the last one.
    const slice: StatementSlice = {
      source: sql,
      tokens,
      first: range.firstToken,
      end: range.endToken,
      from: firstToken.start,
      to: range.semicolon >= 0 ? tokens[range.semicolon]!.end : sql.length,
    };
    const node = parseOne(slice);
    statements.push({ node, text: sql.slice(firstToken.start, lastToken.end), location: firstToken.start });
  }
  return statements;
}

/** Parses one scalar expression (e.g. a default or a check), locations relative to `sql`. */
export function parseExpression(sql: string): Node {
  assertReady();
  const tokens = tokenize(sql);
  if (tokens.length === 0) throw syntaxErrorAt(sql, tokens, 0);
  return parseExpressionRange(sql, 0, sql.length, { tokensAfter: [], intervalShorthand: false });
}
