// `DROP SOURCE [IF EXISTS] name [, ...] [CASCADE | RESTRICT]`, `DROP SINK ...`, and `ALTER SOURCE |
// SINK name RENAME TO / OWNER TO / SET SCHEMA ...`: RisingWave's object kinds PostgreSQL lacks. The
// word is rewritten to one of the same length that PostgreSQL accepts there (SOURCE -> `TABLE `,
// SINK -> `VIEW`), so the statement arrives as PostgreSQL's DropStmt / RenameStmt /
// AlterOwnerStmt / AlterObjectSchemaStmt, and the real kind is set as `oxbowObjectType` on it.

import type { Node } from './ast.js';
import { parsePostgresStatement, type StatementSlice } from './postgres-statement.js';
import { isWord } from './tokenizer.js';

const replacements = { SOURCE: 'TABLE ', SINK: 'VIEW' } as const;

/** Parses the statement if it is DROP / ALTER SOURCE / SINK; otherwise undefined. */
export function parseDropSourceOrSink(slice: StatementSlice): Node | undefined {
  const { tokens, first } = slice;
  if (!isWord(tokens[first], 'DROP') && !isWord(tokens[first], 'ALTER')) return undefined;
  const word = tokens[first + 1];
  if (!isWord(word, 'SOURCE') && !isWord(word, 'SINK')) return undefined;
  const kind = word!.upper as keyof typeof replacements;
  const { node } = parsePostgresStatement(slice, { prepare: (rewrite) => rewrite.replace(word!.start, word!.end, replacements[kind]) });
  const statement = Object.values(node as unknown as Record<string, Record<string, unknown>>)[0];
  if (statement !== undefined) statement['oxbowObjectType'] = kind === 'SOURCE' ? 'source' : 'sink';
  return node;
}
