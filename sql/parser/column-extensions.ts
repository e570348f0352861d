// RisingWave's column-list syntax that PostgreSQL lacks, inside CREATE TABLE / CREATE SOURCE:
//   - `WATERMARK FOR col AS expr` as a list element: blanked, its expression parsed on its own;
//   - `col type AS expr` (a generated column): rewritten to PostgreSQL's
//     `col type GENERATED ALWAYS AS (expr) STORED`, so it arrives as a CONSTR_GENERATED constraint;
//   - `STRUCT<name type, ...>` column types: the type becomes PostgreSQL type name `struct` and the
//     fields, parsed as column definitions (recursively: structs nest), are attached to that
//     TypeName as `oxbowStructFields`.

import type { ColumnDef } from '@pgsql/types';
import type { Node } from './ast.js';
import { parseExpressionRange, tokenizeRange } from './expression.js';
import { parseWithGrammar } from './postgres-grammar.js';
import { identifierName, isNameToken, syntaxErrorAt } from './syntax.js';
import { TextRewrite } from './text-rewrite.js';
import { isSymbol, isWord, type Token } from './tokenizer.js';

export interface Watermark {
  readonly column: string;
  readonly expr: Node;
}

export interface StructType {
  /** Original offset of the STRUCT word (the TypeName's location). */
  readonly location: number;
  readonly fields: ColumnDef[];
}

export interface ColumnExtensions {
  watermark?: Watermark;
  readonly structs: StructType[];
}

const constraintWords = new Set(['PRIMARY', 'UNIQUE', 'CONSTRAINT', 'CHECK', 'FOREIGN', 'EXCLUDE', 'LIKE', 'WATERMARK']);

/** Element ranges [first, end) of the comma-separated list tokens[from, to) at depth 0. */
function listElements(tokens: readonly Token[], from: number, to: number): [number, number][] {
  const elements: [number, number][] = [];
  let depth = 0;
  let first = from;
  for (let index = from; index < to; index++) {
    const token = tokens[index]!;
    if (isSymbol(token, '(') || isSymbol(token, '[')) depth++;
    else if (isSymbol(token, ')') || isSymbol(token, ']')) depth--;
    else if (depth === 0 && isSymbol(token, ',')) {
      elements.push([first, index]);
      first = index + 1;
    }
  }
  if (to > first) elements.push([first, to]);
  return elements;
}

/** Offset of the `>` closing the `<` at offset `open`, counting angle brackets in operator tokens. */
function closingAngle(source: string, tokens: readonly Token[], from: number, open: number): number {
  let depth = 0;
  for (let index = from; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.kind !== 'operator') continue;
    for (let offset = Math.max(token.start, open); offset < token.end; offset++) {
      if (source[offset] === '<') depth++;
      else if (source[offset] === '>') {
        depth--;
        if (depth === 0) return offset;
      }
    }
  }
  return -1;
}

/** Parses `name type, ...` (struct fields) at source[from, to) as column definitions. */
function parseStructFields(source: string, from: number, to: number): ColumnDef[] {
  const tokens = tokenizeRange(source, from, to);
  const rewrite = new TextRewrite(source, from, to).insert(from, ' CREATE TABLE oxbow_struct (').insert(to, ')');
  const extensions = rewriteColumnList(source, tokens, 0, tokens.length, rewrite);
  const nodes = parseWithGrammar(rewrite.build(), source);
  const create = (nodes[0] as { CreateStmt?: { tableElts?: Node[] } }).CreateStmt;
  const fields: ColumnDef[] = [];
  for (const element of create?.tableElts ?? []) {
    const column = (element as { ColumnDef?: ColumnDef }).ColumnDef;
    if (column !== undefined) fields.push(column);
  }
  attachStructFields(fields, extensions.structs);
  return fields;
}

/** Sets `oxbowStructFields` on the TypeName (anywhere under `root`) at each struct's location. */
export function attachStructFields(root: unknown, structs: readonly StructType[]): void {
  if (structs.length === 0) return;
  const byLocation = new Map(structs.map((struct) => [struct.location, struct.fields]));
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object') visit(item);
      return;
    }
    const record = node as Record<string, unknown>;
    if ('typemod' in record && 'names' in record && typeof record['location'] === 'number') {
      const fields = byLocation.get(record['location']);
      if (fields !== undefined) record['oxbowStructFields'] = fields;
    }
    for (const key in record) {
      const value = record[key];
      if (value !== null && typeof value === 'object' && key !== 'oxbowStructFields') visit(value);
    }
  };
  visit(root);
}

/** Rewrites oxbow's syntax in the column list tokens[from, to) (inside the parentheses). */
export function rewriteColumnList(source: string, tokens: readonly Token[], from: number, to: number, rewrite: TextRewrite): ColumnExtensions {
  const extensions: ColumnExtensions = { structs: [] };
  // RisingWave accepts a trailing comma before the closing parenthesis; PostgreSQL does not.
  if (to > from && isSymbol(tokens[to - 1], ',')) {
    rewrite.blank(tokens[to - 1]!.start, tokens[to - 1]!.end);
    to--;
  }
  const elements = listElements(tokens, from, to);
  for (let element = 0; element < elements.length; element++) {
    const [first, end] = elements[element]!;
    const head = tokens[first]!;
    if (isWord(head, 'WATERMARK') && isWord(tokens[first + 1], 'FOR')) {
      if (!isNameToken(tokens[first + 2])) throw syntaxErrorAt(source, tokens, first + 2);
      if (!isWord(tokens[first + 3], 'AS')) throw syntaxErrorAt(source, tokens, first + 3);
      const column = identifierName(source, tokens[first + 2]!);
      const exprFrom = tokens[first + 4]?.start ?? source.length;
      const exprTo = end > first + 4 ? tokens[end - 1]!.end : exprFrom;
      const expr = parseExpressionRange(source, exprFrom, exprTo, { tokensAfter: tokens.slice(end), intervalShorthand: true });
      extensions.watermark = { column, expr };
      // Blank the element with one neighbouring comma, so the list stays well formed.
      const blankFrom = element > 0 ? tokens[first - 1]!.start : head.start;
      const blankTo = element > 0 || end >= to ? tokens[end - 1]!.end : tokens[end]!.end;
      rewrite.blank(blankFrom, blankTo);
      continue;
    }
    if (head.kind === 'identifier' && constraintWords.has(head.upper)) continue;
    let generatedAs = -1;
    let depth = 0;
    for (let index = first + 1; index < end; index++) {
      const token = tokens[index]!;
      if (isSymbol(token, '(') || isSymbol(token, '[')) depth++;
      else if (isSymbol(token, ')') || isSymbol(token, ']')) depth--;
      else if (depth === 0 && isWord(token, 'STRUCT') && token.kind === 'identifier' && tokens[index + 1]?.upper.startsWith('<')) {
        const open = tokens[index + 1]!.start;
        const close = closingAngle(source, tokens, index + 1, open);
        if (close < 0) throw syntaxErrorAt(source, tokens, index + 1);
        extensions.structs.push({ location: token.start, fields: parseStructFields(source, open + 1, close) });
        rewrite.replace(token.start, close + 1, 'struct'.padEnd(close + 1 - token.start, ' '));
        while (index + 1 < end && tokens[index + 1]!.end <= close + 1) index++;
      } else if (depth === 0 && isWord(token, 'AS') && generatedAs < 0) {
        const before = tokens[index - 1];
        if (!isWord(before, 'ALWAYS') && !isWord(before, 'DEFAULT')) generatedAs = index;
        else break; // PostgreSQL's own GENERATED ... AS: leave it alone
      }
    }
    if (generatedAs >= 0) {
      const as = tokens[generatedAs]!;
      if (generatedAs + 1 >= end) throw syntaxErrorAt(source, tokens, end);
      rewrite.replace(as.start, as.end, 'GENERATED ALWAYS AS (');
      rewrite.insert(tokens[end - 1]!.end, ') STORED');
    }
  }
  return extensions;
}
