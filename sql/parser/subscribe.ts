// Subscriptions to a relation's changes:
//   SUBSCRIBE [TO] name | (query) [AS OF e] [WITH (PROGRESS [= bool], SNAPSHOT [= bool])]
//   COPY (SUBSCRIBE ...) TO STDOUT [[WITH] (FORMAT text)]
// (Materialize's forms), and RisingWave's durable kind that pins a relation's history:
//   CREATE SUBSCRIPTION [IF NOT EXISTS] name FROM relation [WITH (retention = '1 day')]
//   DROP SUBSCRIPTION [IF EXISTS] name [, ...]
// and the cursors that read a subscription a FETCH at a time:
//   DECLARE name CURSOR [WITH HOLD | WITHOUT HOLD] FOR SUBSCRIBE ...              (Materialize)
//   DECLARE name SUBSCRIPTION CURSOR FOR subscription [SINCE now() | proctime() | begin() | unix_ms | FULL]
//                                                                                   (RisingWave)
//   FETCH ... WITH (timeout = '1s')                                                (both)
// PostgreSQL's grammar knows none of these (its CREATE SUBSCRIPTION is logical replication's), so
// they are read here; the query and the AS OF expression are parsed by PostgreSQL's grammar. FETCH's
// WITH clause is the one rewrite: the statement before it goes to PostgreSQL's grammar and the
// options ride on its FetchStmt as `oxbowOptions`.

import type {
  Node,
  OxbowCreateSubscription,
  OxbowDeclareSubscribe,
  OxbowDeclareSubscriptionCursor,
  OxbowDropSubscription,
  OxbowSubscribe,
  SubscriptionCursorStart,
} from './ast.js';
import { parseExpressionRange } from './expression.js';
import { parsePostgresStatement, type StatementSlice } from './postgres-statement.js';
import { identifierName, isNameToken, isWordToken, rangeVarOf, readQualifiedName, syntaxErrorAt } from './syntax.js';
import { isSymbol, isWord, matchingClose, type Token } from './tokenizer.js';

/** `( key [= value], ... )` with the `(` at tokens[open]: lower-cased keys, values as text ('' for none). */
function readFlagList(source: string, tokens: readonly Token[], open: number, end: number): { options: Record<string, string>; close: number } {
  const close = matchingClose(tokens, open);
  if (close < 0 || close >= end) throw syntaxErrorAt(source, tokens, end);
  const options: Record<string, string> = {};
  let index = open + 1;
  while (index < close) {
    const key = tokens[index]!;
    if (!isWordToken(key) && key.kind !== 'quotedIdentifier') throw syntaxErrorAt(source, tokens, index);
    const name = identifierName(source, key).toLowerCase();
    index++;
    let value = '';
    if (isSymbol(tokens[index], '=')) {
      index++;
      const token = tokens[index];
      if (token === undefined || index >= close) throw syntaxErrorAt(source, tokens, index);
      value = token.kind === 'string' ? source.slice(token.start + 1, token.end - 1).replace(/''/g, "'") : source.slice(token.start, token.end);
      index++;
    } else if (index < close && !isSymbol(tokens[index], ',')) {
      // `FORMAT text`: PostgreSQL's COPY options take a value without `=`.
      const token = tokens[index]!;
      value = token.kind === 'string' ? source.slice(token.start + 1, token.end - 1) : source.slice(token.start, token.end);
      index++;
    }
    options[name] = value;
    if (isSymbol(tokens[index], ',')) index++;
    else if (index !== close) throw syntaxErrorAt(source, tokens, index);
  }
  return { options, close };
}

/** SUBSCRIBE's body from tokens[index] (after SUBSCRIBE) to tokens[end). */
function readSubscribe(source: string, tokens: readonly Token[], index: number, end: number): Omit<OxbowSubscribe, 'copyOptions'> {
  if (isWord(tokens[index], 'TO')) index++;
  let relation: OxbowSubscribe['relation'];
  let query: Node | undefined;
  let queryText: string | undefined;
  if (isSymbol(tokens[index], '(')) {
    const close = matchingClose(tokens, index);
    if (close < 0 || close >= end) throw syntaxErrorAt(source, tokens, end);
    if (close === index + 1) throw syntaxErrorAt(source, tokens, close);
    const slice: StatementSlice = { source, tokens, first: index + 1, end: close, from: tokens[index + 1]!.start, to: tokens[close - 1]!.end };
    query = parsePostgresStatement(slice).node;
    queryText = source.slice(slice.from, slice.to);
    index = close + 1;
  } else {
    const name = readQualifiedName(source, tokens, index);
    relation = rangeVarOf(name);
    index = name.next;
  }
  let asOf: Node | undefined;
  let asOfLocation: number | undefined;
  if (isWord(tokens[index], 'AS') && isWord(tokens[index + 1], 'OF')) {
    let stop = index + 2;
    while (stop < end && !(isWord(tokens[stop], 'WITH') && isSymbol(tokens[stop + 1], '('))) stop++;
    if (stop === index + 2) throw syntaxErrorAt(source, tokens, stop, end >= tokens.length ? source.length : tokens[end]!.start);
    asOfLocation = tokens[index + 2]!.start;
    asOf = parseExpressionRange(source, asOfLocation, tokens[stop - 1]!.end, { tokensAfter: tokens.slice(stop), intervalShorthand: false });
    index = stop;
  }
  let options: Record<string, string> = {};
  if (isWord(tokens[index], 'WITH') && isSymbol(tokens[index + 1], '(')) {
    const list = readFlagList(source, tokens, index + 1, end);
    options = list.options;
    index = list.close + 1;
  }
  if (index < end) throw syntaxErrorAt(source, tokens, index);
  return {
    ...(relation === undefined ? {} : { relation }),
    ...(query === undefined ? {} : { query, queryText: queryText! }),
    ...(asOf === undefined ? {} : { asOf, asOfLocation: asOfLocation! }),
    options,
  };
}

/** SUBSCRIBE ... or COPY (SUBSCRIBE ...) TO STDOUT ...; undefined for any other statement. */
export function parseSubscribe(slice: StatementSlice): { OxbowSubscribe: OxbowSubscribe } | undefined {
  const { source, tokens, first, end } = slice;
  if (isWord(tokens[first], 'SUBSCRIBE')) {
    return { OxbowSubscribe: readSubscribe(source, tokens, first + 1, end) };
  }
  if (!isWord(tokens[first], 'COPY') || !isSymbol(tokens[first + 1], '(') || !isWord(tokens[first + 2], 'SUBSCRIBE')) return undefined;
  const close = matchingClose(tokens, first + 1);
  if (close < 0 || close >= end) throw syntaxErrorAt(source, tokens, end, slice.to);
  const body = readSubscribe(source, tokens, first + 3, close);
  let index = close + 1;
  if (!isWord(tokens[index], 'TO')) throw syntaxErrorAt(source, tokens, index, slice.to);
  if (!isWord(tokens[index + 1], 'STDOUT')) {
    throw syntaxErrorAt(source, tokens, index + 1, slice.to);
  }
  index += 2;
  if (isWord(tokens[index], 'WITH')) index++;
  let copyOptions: Record<string, string> = {};
  if (isSymbol(tokens[index], '(')) {
    const list = readFlagList(source, tokens, index, end);
    copyOptions = list.options;
    index = list.close + 1;
  }
  if (index < end) throw syntaxErrorAt(source, tokens, index, slice.to);
  return { OxbowSubscribe: { ...body, copyOptions } };
}

/** CREATE SUBSCRIPTION ... FROM ... / DROP SUBSCRIPTION ...; undefined for any other statement. */
export function parseSubscriptionDdl(slice: StatementSlice): { OxbowCreateSubscription: OxbowCreateSubscription } | { OxbowDropSubscription: OxbowDropSubscription } | undefined {
  const { source, tokens, first, end } = slice;
  if (isWord(tokens[first], 'CREATE') && isWord(tokens[first + 1], 'SUBSCRIPTION')) {
    let index = first + 2;
    let ifNotExists = false;
    if (isWord(tokens[index], 'IF') && isWord(tokens[index + 1], 'NOT') && isWord(tokens[index + 2], 'EXISTS')) {
      ifNotExists = true;
      index += 3;
    }
    const name = readQualifiedName(source, tokens, index);
    index = name.next;
    // PostgreSQL's logical-replication form (CONNECTION ... PUBLICATION ...) is not oxbow's.
    if (!isWord(tokens[index], 'FROM')) throw syntaxErrorAt(source, tokens, index, slice.to);
    const from = readQualifiedName(source, tokens, index + 1);
    index = from.next;
    let options: Record<string, string> = {};
    if (isWord(tokens[index], 'WITH') && isSymbol(tokens[index + 1], '(')) {
      const list = readFlagList(source, tokens, index + 1, end);
      options = list.options;
      index = list.close + 1;
    }
    if (index < end) throw syntaxErrorAt(source, tokens, index, slice.to);
    return { OxbowCreateSubscription: { name: rangeVarOf(name), from: rangeVarOf(from), ifNotExists, options } };
  }
  if (isWord(tokens[first], 'DROP') && isWord(tokens[first + 1], 'SUBSCRIPTION')) {
    let index = first + 2;
    let missingOk = false;
    if (isWord(tokens[index], 'IF') && isWord(tokens[index + 1], 'EXISTS')) {
      missingOk = true;
      index += 2;
    }
    const names = [];
    for (;;) {
      const name = readQualifiedName(source, tokens, index);
      names.push(rangeVarOf(name));
      index = name.next;
      if (!isSymbol(tokens[index], ',')) break;
      index++;
    }
    if (isWord(tokens[index], 'CASCADE') || isWord(tokens[index], 'RESTRICT')) index++;
    if (index < end) throw syntaxErrorAt(source, tokens, index, slice.to);
    return { OxbowDropSubscription: { names, missingOk } };
  }
  return undefined;
}

/** `FETCH ... WITH (key = value, ...)`: the FETCH parsed by PostgreSQL's grammar, the options attached. */
function parseFetchWithOptions(slice: StatementSlice): Node | undefined {
  const { source, tokens, first, end } = slice;
  let withIndex = first + 1;
  while (withIndex < end && !(isWord(tokens[withIndex], 'WITH') && isSymbol(tokens[withIndex + 1], '('))) withIndex++;
  if (withIndex >= end) return undefined;
  const list = readFlagList(source, tokens, withIndex + 1, end);
  if (list.close !== end - 1) throw syntaxErrorAt(source, tokens, list.close + 1, slice.to);
  const fetch = parsePostgresStatement({ ...slice, end: withIndex, to: tokens[withIndex - 1]!.end }).node as { FetchStmt?: Record<string, unknown> };
  if (fetch.FetchStmt === undefined) throw syntaxErrorAt(source, tokens, withIndex, slice.to);
  return { FetchStmt: { ...fetch.FetchStmt, oxbowOptions: list.options } } as unknown as Node;
}

/** SINCE's value at tokens[index]: now() / proctime() / begin() or unix milliseconds. */
function readCursorStart(source: string, tokens: readonly Token[], index: number, to: number): { start: SubscriptionCursorStart; next: number } {
  const value = tokens[index];
  if (value?.kind === 'number' && /^\d+$/.test(source.slice(value.start, value.end))) {
    return { start: { kind: 'millis', millis: source.slice(value.start, value.end) }, next: index + 1 };
  }
  const called = isSymbol(tokens[index + 1], '(') && isSymbol(tokens[index + 2], ')');
  if (called && (isWord(value, 'NOW') || isWord(value, 'PROCTIME'))) return { start: { kind: 'now' }, next: index + 3 };
  if (called && isWord(value, 'BEGIN')) return { start: { kind: 'begin' }, next: index + 3 };
  throw syntaxErrorAt(source, tokens, index, to);
}

/**
 * DECLARE name CURSOR FOR SUBSCRIBE ..., DECLARE name SUBSCRIPTION CURSOR FOR s [SINCE ... | FULL],
 * FETCH ... WITH (...); undefined for any other statement (a DECLARE of a query is PostgreSQL's).
 */
export function parseSubscriptionCursor(
  slice: StatementSlice,
): { OxbowDeclareSubscribe: OxbowDeclareSubscribe } | { OxbowDeclareSubscriptionCursor: OxbowDeclareSubscriptionCursor } | Node | undefined {
  const { source, tokens, first, end } = slice;
  if (isWord(tokens[first], 'FETCH')) return parseFetchWithOptions(slice);
  if (!isWord(tokens[first], 'DECLARE') || !isNameToken(tokens[first + 1])) return undefined;
  const name = identifierName(source, tokens[first + 1]!);
  let index = first + 2;
  if (isWord(tokens[index], 'SUBSCRIPTION') && isWord(tokens[index + 1], 'CURSOR')) {
    if (!isWord(tokens[index + 2], 'FOR')) throw syntaxErrorAt(source, tokens, index + 2, slice.to);
    const subscription = readQualifiedName(source, tokens, index + 3);
    index = subscription.next;
    let start: SubscriptionCursorStart = { kind: 'now' };
    let startLocation: number | undefined;
    if (isWord(tokens[index], 'FULL')) {
      start = { kind: 'full' };
      index++;
    } else if (isWord(tokens[index], 'SINCE')) {
      startLocation = tokens[index + 1]?.start;
      const read = readCursorStart(source, tokens, index + 1, slice.to);
      start = read.start;
      index = read.next;
    }
    if (index < end) throw syntaxErrorAt(source, tokens, index, slice.to);
    return { OxbowDeclareSubscriptionCursor: { name, subscription: rangeVarOf(subscription), start, ...(startLocation === undefined ? {} : { startLocation }) } };
  }
  if (!isWord(tokens[index], 'CURSOR')) return undefined;
  index++;
  let hold = false;
  if (isWord(tokens[index], 'WITH') && isWord(tokens[index + 1], 'HOLD')) {
    hold = true;
    index += 2;
  } else if (isWord(tokens[index], 'WITHOUT') && isWord(tokens[index + 1], 'HOLD')) index += 2;
  if (!isWord(tokens[index], 'FOR') || !isWord(tokens[index + 1], 'SUBSCRIBE')) return undefined;
  return { OxbowDeclareSubscribe: { name, hold, subscribe: readSubscribe(source, tokens, index + 2, end) } };
}
