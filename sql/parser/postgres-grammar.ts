// PostgreSQL's own grammar, through libpg-query (PostgreSQL 17's parser compiled to WebAssembly).
// This file owns loading the WebAssembly module once, calling `parseSync` on a rewritten text, and
// turning its answer into oxbow's terms: node locations mapped from UTF-8 byte offsets of the
// rewritten text to character offsets of the ORIGINAL text, and syntax errors into SqlError 42601
// with PostgreSQL's message and 1-based position in the original text.

import { loadModule, parseSync } from 'libpg-query';
import { SqlError, SqlState } from '../errors.js';
import type { Node } from './ast.js';
import { byteToCharacterMap, type RewrittenText } from './text-rewrite.js';
import { forEachProperty } from './walk.js';

let loaded: Promise<void> | undefined;
let ready = false;

/** Loads the WebAssembly parser once; every later call returns the same promise. */
export function loadGrammar(): Promise<void> {
  loaded ??= loadModule().then(() => {
    ready = true;
  });
  return loaded;
}

export function grammarReady(): boolean {
  return ready;
}

interface RawStatement {
  stmt?: Node;
  stmt_location?: number;
  stmt_len?: number;
}

/** Converts a code-point offset of `text` to a UTF-16 offset (they differ only past astral characters). */
function codePointToUtf16(text: string, codePoints: number): number {
  let offset = 0;
  for (let count = 0; count < codePoints && offset < text.length; count++) {
    const code = text.charCodeAt(offset);
    offset += code >= 0xd800 && code <= 0xdbff ? 2 : 1;
  }
  return offset + Math.max(0, codePoints - offset);
}

/** 1-based PostgreSQL position (code points) of a 0-based UTF-16 offset of `text`. */
export function postgresPosition(text: string, offset: number): number {
  let points = 0;
  for (let index = 0; index < offset && index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code >= 0xd800 && code <= 0xdbff) index++;
    points++;
  }
  return points + 1;
}

/**
 * Maps every `location` field of `node` (in place) through `map`; -1 (unknown) stays -1. Iterative,
 * because a long expression (`1 + 1 + ... + 1`) nests thousands of levels deep.
 */
export function mapLocations(node: unknown, map: (location: number) => number): void {
  forEachProperty(node, (record, key, value) => {
    if (typeof value === 'number' && (key === 'location' || key === 'name_location') && value >= 0) record[key] = map(value);
  });
}

/**
 * Parses `rewritten.text` with PostgreSQL's grammar. The text should start with a space so that no
 * node sits at offset 0 (libpg-query omits zero-valued fields, which would lose a location 0).
 * `original` is the whole original input, used for error positions.
 */
export function parseWithGrammar(rewritten: RewrittenText, original: string): Node[] {
  if (!ready) throw new Error('oxbow internal assertion: initParser() must be awaited before parse()');
  let result: { stmts?: RawStatement[] };
  try {
    result = parseSync(rewritten.text) as { stmts?: RawStatement[] };
  } catch (error) {
    throw grammarError(error, rewritten, original);
  }
  const bytes = byteToCharacterMap(rewritten.text);
  const map = (location: number): number => rewritten.toOriginal(bytes === null ? location : (bytes[location] ?? rewritten.text.length));
  const nodes: Node[] = [];
  for (const raw of result.stmts ?? []) {
    if (raw.stmt === undefined) continue;
    mapLocations(raw.stmt, map);
    nodes.push(raw.stmt);
  }
  return nodes;
}

function grammarError(error: unknown, rewritten: RewrittenText, original: string): SqlError {
  if (error instanceof RangeError) {
    // The WebAssembly parser's own recursion (converting a very deep tree) ran out of stack.
    return new SqlError(SqlState.statementTooComplex, 'stack depth limit exceeded', {
      hint: 'The statement nests too deeply; simplify it.',
      cause: error,
    });
  }
  const details = (error as { sqlDetails?: { message?: string; cursorPosition?: number } }).sqlDetails;
  const message = details?.message ?? (error instanceof Error ? error.message : String(error));
  let position: number | undefined;
  if (details?.cursorPosition !== undefined && details.cursorPosition >= 0) {
    const offset = rewritten.toOriginal(codePointToUtf16(rewritten.text, details.cursorPosition));
    position = postgresPosition(original, offset);
  }
  // Every error of PostgreSQL's raw parser (grammar and lexer) is reported with 42601, except the
  // grammar's reserved role names (`CREATE ROLE public`), which PostgreSQL reports with 42939.
  if (/^role name "[^"]*" is reserved$/.test(message)) return new SqlError(SqlState.reservedName, message, { position });
  return new SqlError(SqlState.syntaxError, message, { position });
}
