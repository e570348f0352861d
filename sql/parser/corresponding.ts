// RisingWave's `UNION | INTERSECT | EXCEPT [ALL | DISTINCT] CORRESPONDING [BY (col, ...)]` (SQL:2016):
// the set operation matches columns by name instead of position. The CORRESPONDING clause is blanked
// out of the text PostgreSQL parses and attached as `oxbowCorresponding` to its set-operation
// SelectStmt: the one whose right operand starts first after the operator keyword (the tree has no
// location of the operator itself; nesting and left association both put the right operand of the
// operator at `p` first among those starting after `p`).

import type { Node } from './ast.js';
import { syntaxErrorAt } from './syntax.js';
import type { TextRewrite } from './text-rewrite.js';
import { isSymbol, isWord, type Token } from './tokenizer.js';
import { forEachProperty } from './walk.js';

/** `SelectStmt.oxbowCorresponding`: BY's column names (folded as identifiers are), or all common names. */
export interface CorrespondingClause {
  readonly by?: readonly string[];
  /** Offset of CORRESPONDING in the original text. */
  readonly location: number;
}

export interface PendingCorresponding {
  /** Offset of the UNION / INTERSECT / EXCEPT keyword. */
  readonly operator: number;
  readonly clause: CorrespondingClause;
}

function identifierName(source: string, token: Token): string {
  const text = source.slice(token.start, token.end);
  if (token.kind === 'quotedIdentifier') return text.slice(1, -1).replace(/""/g, '"');
  return text.toLowerCase();
}

/** Finds and blanks every CORRESPONDING clause among tokens[from, to). */
export function extractCorresponding(source: string, tokens: readonly Token[], from: number, to: number, rewrite: TextRewrite): PendingCorresponding[] {
  const pending: PendingCorresponding[] = [];
  for (let index = from; index < to; index++) {
    const token = tokens[index]!;
    if (!isWord(token, 'UNION') && !isWord(token, 'INTERSECT') && !isWord(token, 'EXCEPT')) continue;
    let at = index + 1;
    if (isWord(tokens[at], 'ALL') || isWord(tokens[at], 'DISTINCT')) at++;
    if (!isWord(tokens[at], 'CORRESPONDING')) continue;
    const start = tokens[at]!.start;
    let end = at;
    let by: string[] | undefined;
    if (isWord(tokens[at + 1], 'BY')) {
      if (!isSymbol(tokens[at + 2], '(')) throw syntaxErrorAt(source, tokens, at + 2);
      by = [];
      let next = at + 3;
      for (;;) {
        const name = tokens[next];
        if (name === undefined || (name.kind !== 'identifier' && name.kind !== 'quotedIdentifier')) throw syntaxErrorAt(source, tokens, next);
        by.push(identifierName(source, name));
        if (isSymbol(tokens[next + 1], ',')) next += 2;
        else if (isSymbol(tokens[next + 1], ')')) break;
        else throw syntaxErrorAt(source, tokens, next + 1);
      }
      end = next + 1;
    }
    rewrite.blank(start, tokens[end]!.end);
    pending.push({ operator: token.start, clause: by === undefined ? { location: start } : { by, location: start } });
    index = end;
  }
  return pending;
}

/** The smallest `location` anywhere under `node`. */
function firstLocation(node: unknown): number {
  let best = Infinity;
  forEachProperty(node, (_record, key, value) => {
    if (key === 'location' && typeof value === 'number' && value >= 0 && value < best) best = value;
  });
  return best;
}

/** Set-operation SelectStmts under `node`, with where their right operand starts. */
function setOperations(node: unknown): { readonly select: Record<string, unknown>; readonly rightStart: number }[] {
  const found: { select: Record<string, unknown>; rightStart: number }[] = [];
  forEachProperty(node, (_record, key, value) => {
    // A set operation's operands are SelectStmt bodies themselves (no `SelectStmt` wrapper).
    if ((key !== 'SelectStmt' && key !== 'larg' && key !== 'rarg') || value === null || typeof value !== 'object') return;
    const select = value as Record<string, unknown>;
    if (select['op'] !== undefined && select['op'] !== 'SETOP_NONE' && select['rarg'] !== undefined) found.push({ select, rightStart: firstLocation(select['rarg']) });
  });
  return found;
}

/** Attaches each clause to its set operation. */
export function attachCorresponding(source: string, tokens: readonly Token[], root: Node, pending: readonly PendingCorresponding[]): void {
  if (pending.length === 0) return;
  const operations = setOperations(root);
  for (const { operator, clause } of pending) {
    let best: { select: Record<string, unknown>; rightStart: number } | undefined;
    for (const candidate of operations) {
      if (candidate.rightStart > operator && (best === undefined || candidate.rightStart < best.rightStart)) best = candidate;
    }
    if (best === undefined) throw syntaxErrorAt(source, tokens, tokens.findIndex((token) => token.start === clause.location));
    best.select['oxbowCorresponding'] = clause;
  }
}
