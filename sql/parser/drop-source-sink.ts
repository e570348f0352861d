// `DROP SOURCE [IF EXISTS] name [, ...] [CASCADE | RESTRICT]` and `DROP SINK ...`, RisingWave's
// object kinds PostgreSQL lacks. The word is rewritten to one of the same length that PostgreSQL's
// DROP accepts (SOURCE -> `TABLE `, SINK -> `VIEW`), so the statement arrives as PostgreSQL's
// DropStmt, and the real kind is set as `oxbowObjectType` on it.

import type { Node } from './ast.js';
import { parsePostgresStatement, type StatementSlice } from './postgres-statement.js';
import { isWord } from './tokenizer.js';

const replacements = { SOURCE: 'TABLE ', SINK: 'VIEW' } as const;

/** Parses the statement if it is DROP SOURCE / DROP SINK; otherwise undefined. */
export function parseDropSourceOrSink(slice: StatementSlice): Node | undefined {
  const { tokens, first } = slice;
  if (!isWord(tokens[first], 'DROP')) return undefined;
  const word = tokens[first + 1];
  if (!isWord(word, 'SOURCE') && !isWord(word, 'SINK')) return undefined;
  const kind = word!.upper as keyof typeof replacements;
  const { node } = parsePostgresStatement(slice, { prepare: (rewrite) => rewrite.replace(word!.start, word!.end, replacements[kind]) });
  const drop = (node as { DropStmt?: Record<string, unknown> }).DropStmt;
  if (drop !== undefined) drop['oxbowObjectType'] = kind === 'SOURCE' ? 'source' : 'sink';
  return node;
}
