// Splits a token list into statements at top-level semicolons, as psql and PostgreSQL's grammar do.
// The one place where a semicolon does not end a statement is the body of a SQL-standard function
// (`CREATE FUNCTION ... BEGIN ATOMIC ...; ...; END`), tracked here like psql tracks it: BEGIN ATOMIC
// opens a block, CASE opens a nested one, END closes one.

import { isSymbol, isWord, type Token } from './tokenizer.js';

export interface StatementRange {
  /** Index of the statement's first token. */
  readonly firstToken: number;
  /** Index just past the statement's last token (the semicolon, if any, is not included). */
  readonly endToken: number;
  /** Index of the terminating semicolon token, or -1 at the end of the input. */
  readonly semicolon: number;
}

export function splitStatements(tokens: readonly Token[]): StatementRange[] {
  const ranges: StatementRange[] = [];
  let first = 0;
  let blockDepth = 0;
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.kind === 'identifier') {
      if (token.upper === 'ATOMIC' && isWord(tokens[index - 1], 'BEGIN')) blockDepth++;
      else if (blockDepth > 0 && token.upper === 'CASE') blockDepth++;
      else if (blockDepth > 0 && token.upper === 'END') blockDepth--;
      continue;
    }
    if (blockDepth === 0 && isSymbol(token, ';')) {
      if (index > first) ranges.push({ firstToken: first, endToken: index, semicolon: index });
      first = index + 1;
    }
  }
  if (tokens.length > first) ranges.push({ firstToken: first, endToken: tokens.length, semicolon: -1 });
  return ranges;
}
