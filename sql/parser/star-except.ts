// RisingWave's `SELECT * EXCEPT (a, b)` and `SELECT t.* EXCEPT (a)`: every column the star expands to
// but the named ones. The EXCEPT list is blanked out of the text PostgreSQL parses and attached as
// `oxbowExcept` (names folded as identifiers are) to the ResTarget of the star. A parenthesized
// query after `* EXCEPT` is PostgreSQL's set operation and is left alone.

import type { Node } from './ast.js';
import { syntaxErrorAt } from './syntax.js';
import type { TextRewrite } from './text-rewrite.js';
import { isSymbol, isWord, type Token } from './tokenizer.js';
import { forEachProperty } from './walk.js';

export interface PendingStarExcept {
  /** Offset of the star's target (the qualifier's first token for `t.*`). */
  readonly target: number;
  readonly names: readonly string[];
}

const QUERY_STARTS = new Set(['SELECT', 'VALUES', 'WITH', 'TABLE']);

function identifierName(source: string, token: Token): string {
  const text = source.slice(token.start, token.end);
  return token.kind === 'quotedIdentifier' ? text.slice(1, -1).replace(/""/g, '"') : text.toLowerCase();
}

/** Finds and blanks every `* EXCEPT (names)` among tokens[from, to). */
export function extractStarExcept(source: string, tokens: readonly Token[], from: number, to: number, rewrite: TextRewrite): PendingStarExcept[] {
  const pending: PendingStarExcept[] = [];
  for (let index = from; index + 2 < to; index++) {
    if (!isSymbol(tokens[index], '*') || !isWord(tokens[index + 1], 'EXCEPT') || !isSymbol(tokens[index + 2], '(')) continue;
    const first = tokens[index + 3];
    if (first === undefined || isSymbol(first, '(') || (first.kind === 'identifier' && QUERY_STARTS.has(first.upper))) continue;
    const names: string[] = [];
    let next = index + 3;
    for (;;) {
      const name = tokens[next];
      if (name === undefined || (name.kind !== 'identifier' && name.kind !== 'quotedIdentifier')) throw syntaxErrorAt(source, tokens, next);
      names.push(identifierName(source, name));
      if (isSymbol(tokens[next + 1], ',')) next += 2;
      else if (isSymbol(tokens[next + 1], ')')) break;
      else throw syntaxErrorAt(source, tokens, next + 1);
    }
    // The target starts at the star, or at the first name of its qualifier (`s.t.*`).
    let start = index;
    while (start >= 2 && isSymbol(tokens[start - 1], '.') && (tokens[start - 2]!.kind === 'identifier' || tokens[start - 2]!.kind === 'quotedIdentifier')) start -= 2;
    rewrite.blank(tokens[index + 1]!.start, tokens[next + 1]!.end);
    pending.push({ target: tokens[start]!.start, names });
    index = next + 1;
  }
  return pending;
}

/** Attaches each EXCEPT list to the ResTarget at its offset. */
export function attachStarExcept(source: string, tokens: readonly Token[], root: Node, pending: readonly PendingStarExcept[]): void {
  if (pending.length === 0) return;
  const targets = new Map<number, Record<string, unknown>>();
  forEachProperty(root, (_record, key, value) => {
    if (key !== 'ResTarget' || value === null || typeof value !== 'object') return;
    const target = value as Record<string, unknown>;
    if (typeof target['location'] === 'number') targets.set(target['location'], target);
  });
  for (const { target, names } of pending) {
    const found = targets.get(target);
    if (found === undefined) throw syntaxErrorAt(source, tokens, tokens.findIndex((token) => token.start === target));
    found['oxbowExcept'] = names;
  }
}
