// Small shared pieces of the extension layer: syntax errors worded and positioned as PostgreSQL's
// grammar words them, identifier folding as PostgreSQL folds (unquoted names lower-cased, quoted
// ones kept with "" unescaped), qualified names as RangeVar nodes, and string-literal decoding.

import type { RangeVar } from '@pgsql/types';
import { SqlError, SqlState } from '../errors.js';
import { postgresPosition } from './postgres-grammar.js';
import { isSymbol, type Token } from './tokenizer.js';

/** PostgreSQL's `syntax error at or near "x"` (or `at end of input`) for tokens[index]. */
export function syntaxErrorAt(source: string, tokens: readonly Token[], index: number, endOfInput = source.length): SqlError {
  const token = tokens[index];
  if (token === undefined) {
    return new SqlError(SqlState.syntaxError, 'syntax error at end of input', { position: postgresPosition(source, endOfInput) });
  }
  return new SqlError(SqlState.syntaxError, `syntax error at or near "${source.slice(token.start, token.end)}"`, {
    position: postgresPosition(source, token.start),
  });
}

/** PostgreSQL's fully reserved keywords: never a bare name (src/include/parser/kwlist.h, RESERVED_KEYWORD). */
const reservedWords = new Set(
  ('ALL ANALYSE ANALYZE AND ANY ARRAY AS ASC ASYMMETRIC BOTH CASE CAST CHECK COLLATE COLUMN CONSTRAINT CREATE ' +
    'CURRENT_CATALOG CURRENT_DATE CURRENT_ROLE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER DEFAULT DEFERRABLE DESC ' +
    'DISTINCT DO ELSE END EXCEPT FALSE FETCH FOR FOREIGN FROM GRANT GROUP HAVING IN INITIALLY INTERSECT INTO LATERAL ' +
    'LEADING LIMIT LOCALTIME LOCALTIMESTAMP NOT NULL OFFSET ON ONLY OR ORDER PLACING PRIMARY REFERENCES RETURNING ' +
    'SELECT SESSION_USER SOME SYMMETRIC SYSTEM_USER TABLE THEN TO TRAILING TRUE UNION UNIQUE USER USING VARIADIC ' +
    'WHEN WHERE WINDOW WITH').split(' '),
);

/** Any word, reserved or not, or a quoted identifier (option keys such as `nexmark.table.type`). */
export function isWordToken(token: Token | undefined): boolean {
  return token !== undefined && (token.kind === 'identifier' || token.kind === 'quotedIdentifier');
}

/** A token that can be a name: a quoted identifier, or a bare word that is not reserved. */
export function isNameToken(token: Token | undefined): boolean {
  if (token === undefined) return false;
  return token.kind === 'quotedIdentifier' || (token.kind === 'identifier' && !reservedWords.has(token.upper));
}

/** The name a token denotes: unquoted words fold to lower case, "quoted" ones are kept. */
export function identifierName(source: string, token: Token): string {
  const text = source.slice(token.start, token.end);
  if (token.kind === 'quotedIdentifier') {
    const body = text.startsWith('U&') || text.startsWith('u&') ? text.slice(3, -1) : text.slice(1, -1);
    return body.replace(/""/g, '"');
  }
  return text.toLowerCase();
}

export interface QualifiedName {
  readonly parts: string[];
  /** Index of the first token after the name. */
  readonly next: number;
  readonly location: number;
}

/** Reads `a`, `a.b` or `a.b.c` starting at tokens[index]; throws a syntax error if no name is there. */
export function readQualifiedName(source: string, tokens: readonly Token[], index: number): QualifiedName {
  const first = tokens[index];
  if (!isNameToken(first)) throw syntaxErrorAt(source, tokens, index);
  const parts = [identifierName(source, first!)];
  let next = index + 1;
  while (isSymbol(tokens[next], '.') && isNameToken(tokens[next + 1])) {
    parts.push(identifierName(source, tokens[next + 1]!));
    next += 2;
  }
  return { parts, next, location: first!.start };
}

/** A RangeVar as PostgreSQL's grammar builds it for a qualified name. */
export function rangeVarOf(name: QualifiedName): RangeVar {
  const parts = name.parts;
  const relname = parts[parts.length - 1]!;
  const rangeVar: RangeVar = { relname, inh: true, relpersistence: 'p', location: name.location };
  if (parts.length >= 2) rangeVar.schemaname = parts[parts.length - 2]!;
  if (parts.length >= 3) rangeVar.catalogname = parts[parts.length - 3]!;
  return rangeVar;
}

/** The value of a string-literal token ('', E'', $$ $$), or the text itself for other tokens. */
export function literalText(source: string, token: Token): string {
  const text = source.slice(token.start, token.end);
  if (token.kind === 'quotedIdentifier') return identifierName(source, token);
  if (token.kind !== 'string') return token.kind === 'identifier' ? text.toLowerCase() : text;
  if (text.startsWith('$')) {
    const delimiterEnd = text.indexOf('$', 1) + 1;
    return text.slice(delimiterEnd, text.length - delimiterEnd);
  }
  if (text[0] === 'e' || text[0] === 'E') {
    return text.slice(2, -1).replace(/''/g, "'").replace(/\\(.)/g, (_match, char: string) => {
      switch (char) {
        case 'n':
          return '\n';
        case 't':
          return '\t';
        case 'r':
          return '\r';
        case 'b':
          return '\b';
        case 'f':
          return '\f';
        default:
          return char;
      }
    });
  }
  const quote = text.indexOf("'");
  return text.slice(quote + 1, -1).replace(/''/g, "'");
}
