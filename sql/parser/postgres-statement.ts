// One statement that PostgreSQL's grammar parses once oxbow's clauses are taken out of it. This file
// owns the order of that work: find oxbow's clauses among the statement's tokens (FOR SYSTEM_TIME,
// EMIT ON WINDOW CLOSE, CREATE TABLE's connector tail and column-list syntax, dotted option keys),
// rewrite the text, parse it with libpg-query, then attach the clauses to the PostgreSQL nodes as
// the `oxbow*` fields that ast.ts documents.

import type { ConnectorSpec, Node } from './ast.js';
import { attachStructFields, rewriteColumnList, type ColumnExtensions } from './column-extensions.js';
import { quoteDottedKeys, readConnectorTail, readOptionList } from './connector-clause.js';
import { parseWithGrammar } from './postgres-grammar.js';
import { attachSystemTimeClauses, extractSystemTimeClauses } from './system-time.js';
import { attachCorresponding, extractCorresponding } from './corresponding.js';
import { attachStarExcept, extractStarExcept } from './star-except.js';
import { isNameToken, isWordToken, syntaxErrorAt } from './syntax.js';
import { TextRewrite } from './text-rewrite.js';
import { mentionsDoubleType, normalizeDoubleType } from './type-aliases.js';
import { isSymbol, isWord, matchingClose, type Token } from './tokenizer.js';

export interface StatementSlice {
  readonly source: string;
  readonly tokens: readonly Token[];
  /** Token range of the statement: [first, end). */
  readonly first: number;
  readonly end: number;
  /** Original text range fed to the grammar: from the first token through the `;` (or the input's end). */
  readonly from: number;
  readonly to: number;
}

export interface CreateTableExtras {
  readonly connector?: ConnectorSpec;
  readonly appendOnly: boolean;
  readonly onConflict?: string;
  readonly columns?: ColumnExtensions;
  /** Index of the token after the table name. */
  readonly afterName: number;
}

/** Index of the table name after CREATE [OR REPLACE] [TEMP|TEMPORARY|UNLOGGED] TABLE [IF NOT EXISTS], or -1. */
function createTableNameIndex(tokens: readonly Token[], first: number, tableWord: string): number {
  let index = first;
  if (!isWord(tokens[index], 'CREATE')) return -1;
  index++;
  if (isWord(tokens[index], 'OR') && isWord(tokens[index + 1], 'REPLACE')) index += 2;
  while (['TEMP', 'TEMPORARY', 'UNLOGGED', 'GLOBAL', 'LOCAL'].some((word) => isWord(tokens[index], word))) index++;
  if (!isWord(tokens[index], tableWord)) return -1;
  index++;
  if (isWord(tokens[index], 'IF') && isWord(tokens[index + 1], 'NOT') && isWord(tokens[index + 2], 'EXISTS')) index += 3;
  return index;
}

/**
 * CREATE TABLE's column list and tail (also used by CREATE SOURCE, rewritten to CREATE TABLE: then
 * `forceConnector` is set, the word is SOURCE and every WITH list is connector options).
 */
export function rewriteCreateTable(slice: StatementSlice, rewrite: TextRewrite, forceConnector: boolean): CreateTableExtras | undefined {
  const { source, tokens, first, end } = slice;
  const nameIndex = createTableNameIndex(tokens, first, forceConnector ? 'SOURCE' : 'TABLE');
  if (nameIndex < 0) return undefined;
  let index = nameIndex;
  if (!isNameToken(tokens[index])) throw syntaxErrorAt(source, tokens, index);
  index++;
  while (isSymbol(tokens[index], '.') && isNameToken(tokens[index + 1])) index += 2;
  const afterName = index;
  // CREATE TABLE t [(names)] [WITH (...)] AS query, CREATE TABLE t OF type, CREATE TABLE t PARTITION OF:
  // PostgreSQL's own forms, where oxbow only quotes dotted option keys.
  let probe = index;
  if (isSymbol(tokens[probe], '(')) probe = matchingClose(tokens, probe) + 1;
  if (isWord(tokens[probe], 'WITH') && isSymbol(tokens[probe + 1], '(')) probe = matchingClose(tokens, probe + 1) + 1;
  if (probe > 0 && (isWord(tokens[probe], 'AS') || isWord(tokens[index], 'OF') || isWord(tokens[index], 'PARTITION'))) {
    quoteOptionKeys(slice, rewrite);
    return { appendOnly: false, afterName };
  }
  let columns: ColumnExtensions | undefined;
  if (isSymbol(tokens[index], '(')) {
    const close = matchingClose(tokens, index);
    if (close < 0 || close >= end) throw syntaxErrorAt(source, tokens, end, slice.to);
    columns = rewriteColumnList(source, tokens, index + 1, close, rewrite);
    index = close + 1;
  }
  const tail = readConnectorTail(source, tokens, index, end, rewrite, forceConnector);
  // RisingWave allows a source without a column list (the schema comes from the connector).
  if (columns === undefined && tail.connector !== undefined) rewrite.insert(tokens[afterName - 1]!.end, ' ()');
  const extras: { connector?: ConnectorSpec; appendOnly: boolean; onConflict?: string; columns?: ColumnExtensions; afterName: number } = {
    appendOnly: tail.appendOnly,
    afterName,
  };
  if (tail.onConflict !== undefined) extras.onConflict = tail.onConflict;
  if (tail.connector !== undefined) extras.connector = tail.connector;
  if (columns !== undefined) extras.columns = columns;
  return extras;
}

/** Quotes dotted keys in every `WITH (` / `SET (` / `RESET (` option list of the statement. */
function quoteOptionKeys(slice: StatementSlice, rewrite: TextRewrite): void {
  const { source, tokens, first, end } = slice;
  for (let index = first; index + 1 < end; index++) {
    const word = tokens[index]!;
    if (!(isWord(word, 'WITH') || isWord(word, 'SET') || isWord(word, 'RESET')) || !isSymbol(tokens[index + 1], '(')) continue;
    // Only option lists (`key = value` / `key` items), not `SET (a, b) = (...)` in UPDATE.
    const key = tokens[index + 2];
    if (!isWordToken(key) || !(isSymbol(tokens[index + 3], '.') || isSymbol(tokens[index + 3], '='))) continue;
    try {
      const list = readOptionList(source, tokens, index + 1);
      quoteDottedKeys(source, tokens, list, rewrite);
      index = list.close;
    } catch {
      // Not an option list oxbow understands (e.g. `RESET (fillfactor)`): PostgreSQL will judge it.
    }
  }
}

/** Finds `EMIT ON WINDOW CLOSE` at depth 0 and blanks it; true if present. */
function extractEmitOnWindowClose(slice: StatementSlice, rewrite: TextRewrite): boolean {
  const { tokens, first, end } = slice;
  let depth = 0;
  let found = false;
  for (let index = first; index < end; index++) {
    const token = tokens[index]!;
    if (isSymbol(token, '(')) depth++;
    else if (isSymbol(token, ')')) depth--;
    else if (depth === 0 && isWord(token, 'EMIT') && isWord(tokens[index + 1], 'ON') && isWord(tokens[index + 2], 'WINDOW') && isWord(tokens[index + 3], 'CLOSE')) {
      rewrite.blank(token.start, tokens[index + 3]!.end);
      found = true;
      index += 3;
    }
  }
  return found;
}

export interface PostgresStatementOptions {
  /** Extra edits before parsing (CREATE SOURCE turns its SOURCE word into TABLE). */
  readonly prepare?: (rewrite: TextRewrite) => void;
  readonly forceConnector?: boolean;
}

/** Parses one statement with PostgreSQL's grammar plus oxbow's clauses. */
export function parsePostgresStatement(slice: StatementSlice, options: PostgresStatementOptions = {}): { node: Node; createTable?: CreateTableExtras } {
  const { source, tokens } = slice;
  // The leading space keeps every node off offset 0 (libpg-query drops zero-valued fields).
  const rewrite = new TextRewrite(source, slice.from, slice.to).insert(slice.from, ' ');
  options.prepare?.(rewrite);
  const systemTime = extractSystemTimeClauses(source, tokens, slice.first, slice.end, rewrite);
  const emitOnWindowClose = extractEmitOnWindowClose(slice, rewrite);
  const corresponding = extractCorresponding(source, tokens, slice.first, slice.end, rewrite);
  const starExcept = extractStarExcept(source, tokens, slice.first, slice.end, rewrite);
  const createTable = rewriteCreateTable(slice, rewrite, options.forceConnector ?? false);
  if (createTable === undefined) quoteOptionKeys(slice, rewrite);
  const nodes = parseWithGrammar(rewrite.build(), source);
  if (nodes.length !== 1) {
    // The splitter saw one statement where the grammar sees several (or none): report it as the
    // grammar would see the second one.
    throw syntaxErrorAt(source, tokens, slice.first);
  }
  const node = nodes[0]!;
  attachSystemTimeClauses(source, tokens, node, systemTime);
  attachCorresponding(source, tokens, node, corresponding);
  attachStarExcept(source, tokens, node, starExcept);
  if (emitOnWindowClose) {
    const record = node as unknown as Record<string, Record<string, unknown>>;
    // EXPLAIN [ANALYZE] CREATE MATERIALIZED VIEW ... EMIT ON WINDOW CLOSE marks the explained statement.
    const explained = record['ExplainStmt']?.['query'] as Record<string, Record<string, unknown>> | undefined;
    const top = record['SelectStmt'] ?? record['CreateTableAsStmt'] ?? explained?.['CreateTableAsStmt'] ?? explained?.['SelectStmt'];
    if (top === undefined) throw syntaxErrorAt(source, tokens, tokens.findIndex((token) => isWord(token, 'EMIT') && token.start >= slice.from));
    top['oxbowEmitOnWindowClose'] = true;
    const query = (top['query'] as Record<string, Record<string, unknown>> | undefined)?.['SelectStmt'];
    if (query !== undefined) query['oxbowEmitOnWindowClose'] = true;
  }
  if (createTable !== undefined) {
    const create = (node as { CreateStmt?: Record<string, unknown> }).CreateStmt;
    if (create !== undefined) {
      if (createTable.connector !== undefined) create['oxbowConnector'] = createTable.connector;
      if (createTable.appendOnly) create['oxbowAppendOnly'] = true;
      if (createTable.onConflict !== undefined) create['oxbowOnConflict'] = createTable.onConflict;
      if (createTable.columns?.watermark !== undefined) create['oxbowWatermark'] = createTable.columns.watermark;
      if (createTable.columns !== undefined) attachStructFields(create['tableElts'], createTable.columns.structs);
    }
  }
  // After every attachment, so struct fields and clause expressions are covered too.
  if (mentionsDoubleType(tokens, slice.first, slice.end)) normalizeDoubleType(node);
  return createTable === undefined ? { node } : { node, createTable };
}
