// `FOR SYSTEM_TIME AS OF e` and `FOR SYSTEM_TIME BETWEEN a AND b` after a table reference (before or
// after its alias: `FROM t FOR SYSTEM_TIME AS OF e AS x` as RisingWave writes it, and
// `FROM t AS x FOR SYSTEM_TIME AS OF e`). The clause is blanked out of the text PostgreSQL parses;
// its expressions are parsed on their own (with RisingWave's `'5' SECOND` interval shorthand), and
// the clause is attached as `oxbowSystemTime` to the table reference it follows: the RangeVar with
// the greatest location before the clause.

import type { Node, SystemTimeClause } from './ast.js';
import { parseExpressionRange } from './expression.js';
import { syntaxErrorAt } from './syntax.js';
import type { TextRewrite } from './text-rewrite.js';
import { isSymbol, isWord, type Token } from './tokenizer.js';
import { forEachProperty } from './walk.js';

/** Words that end the expression of a FOR SYSTEM_TIME clause at parenthesis depth 0. */
const endWords = new Set([
  'WHERE', 'GROUP', 'HAVING', 'ORDER', 'LIMIT', 'OFFSET', 'FETCH', 'WINDOW', 'UNION', 'INTERSECT', 'EXCEPT',
  'JOIN', 'INNER', 'LEFT', 'RIGHT', 'FULL', 'CROSS', 'NATURAL', 'ON', 'USING', 'AS', 'FOR', 'RETURNING', 'EMIT',
  'TABLESAMPLE', 'WITH',
]);

/** Words that continue an expression after a closing parenthesis (anything else there is an alias). */
const operatorWords = new Set([
  'AND', 'OR', 'IS', 'NOT', 'ISNULL', 'NOTNULL', 'BETWEEN', 'IN', 'LIKE', 'ILIKE', 'SIMILAR', 'AT', 'COLLATE', 'OPERATOR',
]);

/** Index of the first token at or after `from` that ends an expression (`AND` too when `stopAtAnd`). */
function expressionEnd(tokens: readonly Token[], from: number, to: number, stopAtAnd: boolean): number {
  let depth = 0;
  for (let index = from; index < to; index++) {
    const token = tokens[index]!;
    if (isSymbol(token, '(') || isSymbol(token, '[')) depth++;
    else if (isSymbol(token, ')') || isSymbol(token, ']')) {
      if (depth === 0) return index;
      depth--;
    } else if (depth === 0) {
      if (isSymbol(token, ',') || isSymbol(token, ';')) return index;
      if (token.kind === 'identifier' && (endWords.has(token.upper) || (stopAtAnd && token.upper === 'AND'))) return index;
      // RisingWave's alias without AS after the clause: `FOR SYSTEM_TIME AS OF PROCTIME() s`.
      if (token.kind !== 'identifier' && token.kind !== 'quotedIdentifier') continue;
      if (index > from && isSymbol(tokens[index - 1], ')') && !operatorWords.has(token.upper)) return index;
    }
  }
  return to;
}

interface PendingClause {
  /** Offset of FOR in the original text. */
  readonly start: number;
  readonly clause: SystemTimeClause;
}

function parseRange(source: string, tokens: readonly Token[], first: number, end: number): Node {
  const from = tokens[first]?.start ?? source.length;
  const to = end > first ? tokens[end - 1]!.end : from;
  return parseExpressionRange(source, from, to, { tokensAfter: tokens.slice(end), intervalShorthand: true });
}

/** Finds, parses and blanks every FOR SYSTEM_TIME clause among tokens[from, to). */
export function extractSystemTimeClauses(
  source: string,
  tokens: readonly Token[],
  from: number,
  to: number,
  rewrite: TextRewrite,
): PendingClause[] {
  const pending: PendingClause[] = [];
  for (let index = from; index < to; index++) {
    if (!isWord(tokens[index], 'FOR') || !isWord(tokens[index + 1], 'SYSTEM_TIME')) continue;
    const start = tokens[index]!.start;
    let clause: SystemTimeClause;
    let end: number;
    if (isWord(tokens[index + 2], 'AS') && isWord(tokens[index + 3], 'OF')) {
      end = expressionEnd(tokens, index + 4, to, false);
      clause = { kind: 'asOf', at: parseRange(source, tokens, index + 4, end), location: start };
    } else if (isWord(tokens[index + 2], 'BETWEEN')) {
      const and = expressionEnd(tokens, index + 3, to, true);
      if (!isWord(tokens[and], 'AND')) throw syntaxErrorAt(source, tokens, and);
      end = expressionEnd(tokens, and + 1, to, false);
      clause = { kind: 'between', from: parseRange(source, tokens, index + 3, and), to: parseRange(source, tokens, and + 1, end), location: start };
    } else {
      throw syntaxErrorAt(source, tokens, index + 2);
    }
    rewrite.blank(start, tokens[end - 1]!.end);
    pending.push({ start, clause });
    index = end - 1;
  }
  return pending;
}

/** Collects every `{ RangeVar: ... }` node (table references) under `node`, iteratively (deep trees). */
function collectRangeVars(node: unknown, found: Record<string, unknown>[]): void {
  forEachProperty(node, (_record, key, value) => {
    if (key === 'RangeVar' && value !== null && typeof value === 'object') found.push(value as Record<string, unknown>);
  });
}

/**
 * True when only the table name and its alias (`t`, `s.t`, `t AS x`, `t x (a, b)`) stand between
 * the table reference at `location` and the FOR at tokens[forIndex]: `FROM a, (SELECT 1) s FOR
 * SYSTEM_TIME ...` must not attach the clause to `a`.
 */
function directlyFollows(tokens: readonly Token[], location: number, forIndex: number): boolean {
  let depth = 0;
  for (let index = forIndex - 1; index >= 0 && tokens[index]!.start >= location; index--) {
    const token = tokens[index]!;
    if (isSymbol(token, ')')) depth++;
    else if (isSymbol(token, '(')) depth--;
    else if (depth > 0) continue;
    else if (token.kind === 'quotedIdentifier' || isSymbol(token, '.') || isWord(token, 'AS')) continue;
    else if (token.kind === 'identifier' && !endWords.has(token.upper)) continue;
    else return false;
  }
  return depth === 0;
}

/** Attaches each clause to the table reference it follows; a clause after no table is an error. */
export function attachSystemTimeClauses(source: string, tokens: readonly Token[], root: Node, pending: readonly PendingClause[]): void {
  if (pending.length === 0) return;
  const rangeVars: Record<string, unknown>[] = [];
  collectRangeVars(root, rangeVars);
  for (const { start, clause } of pending) {
    let best: Record<string, unknown> | undefined;
    for (const candidate of rangeVars) {
      const location = candidate['location'] as number | undefined;
      if (location === undefined || location >= start) continue;
      if (best === undefined || location > (best['location'] as number)) best = candidate;
    }
    const forIndex = tokens.findIndex((token) => token.start === start);
    if (best === undefined || best['oxbowSystemTime'] !== undefined || !directlyFollows(tokens, best['location'] as number, forIndex)) {
      throw syntaxErrorAt(source, tokens, forIndex);
    }
    best['oxbowSystemTime'] = clause;
  }
}
