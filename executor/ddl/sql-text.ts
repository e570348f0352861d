// Small helpers over the parse tree and the statement text shared by the DDL handlers: reading
// name lists, checking a schema can take new objects, and cutting an expression's source text out
// of the statement (DEFAULT expressions and view definitions are stored as the text the user wrote,
// which the planner parses and binds when it needs them).

import type { Node, RangeVar } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { DdlContext } from './ddl-context.js';
import { positionOf, targetSchemaName } from './ddl-context.js';

export function stringValue(node: Node | undefined): string {
  const value = (node as { String?: { sval?: string } } | undefined)?.String?.sval;
  return value ?? '';
}

/** A List of String nodes (DROP's and COMMENT's object names) as strings. */
export function nameList(node: Node | undefined): string[] {
  const items = (node as { List?: { items?: Node[] } } | undefined)?.List?.items;
  if (items !== undefined) return items.map(stringValue);
  const single = stringValue(node);
  return single === '' ? [] : [single];
}

const systemSchemas = new Set(['pg_catalog', 'information_schema', 'oxbow_catalog']);

/** The schema a CREATE writes into, checked: it exists and is not a system schema. */
export function creationSchema(context: DdlContext, relation: RangeVar): string {
  const name = targetSchemaName(context, relation.schemaname);
  const position = positionOf(context, relation.location);
  if (name === '') throw new SqlError(SqlState.invalidSchemaName, 'no schema has been selected to create in', { position });
  if (context.catalog.schema(name) === undefined) {
    throw new SqlError(SqlState.invalidSchemaName, `schema "${name}" does not exist`, { position });
  }
  if (systemSchemas.has(name)) {
    throw new SqlError(SqlState.insufficientPrivilege, `permission denied to create "${name}.${relation.relname ?? ''}"`, {
      position,
      detail: 'System catalog modifications are currently disallowed.',
    });
  }
  return name;
}

const constraintKeywords = new Set([
  'not',
  'null',
  'primary',
  'unique',
  'check',
  'references',
  'constraint',
  'default',
  'collate',
  'generated',
]);

/**
 * The source text of the expression starting at `start` (an offset into the statement text):
 * it ends at the first top-level `,` or `)`, or at a column-constraint keyword, outside quotes.
 */
export function expressionTextAt(text: string, start: number): string {
  let depth = 0;
  let index = start;
  while (index < text.length) {
    const character = text[index]!;
    if (character === "'" || character === '"') {
      const close = text.indexOf(character, index + 1);
      index = close < 0 ? text.length : close + 1;
      // A doubled quote continues the literal.
      while (index < text.length && text[index] === character) {
        const next = text.indexOf(character, index + 1);
        index = next < 0 ? text.length : next + 1;
      }
      continue;
    }
    if (character === '(') depth++;
    else if (character === ')') {
      if (depth === 0) break;
      depth--;
    } else if (character === ',' && depth === 0) break;
    else if (character === ';' && depth === 0) break;
    else if (depth === 0 && /[A-Za-z_]/.test(character) && (index === start || !/[A-Za-z0-9_$]/.test(text[index - 1]!))) {
      const match = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(text.slice(index))!;
      if (index > start && constraintKeywords.has(match[0].toLowerCase())) break;
      index += match[0].length;
      continue;
    }
    index++;
  }
  return text.slice(start, index).trim();
}

/** The query text after `AS` in CREATE [OR REPLACE] [MATERIALIZED] VIEW name [(cols)] AS query. */
export function viewQueryText(statementText: string): string {
  const match = /^\s*create\s+(?:or\s+replace\s+)?(?:temp\s+|temporary\s+)?(?:recursive\s+)?(?:materialized\s+)?view\s+(?:if\s+not\s+exists\s+)?(?:"(?:[^"]|"")*"|[^\s(]+)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[^\s(]+))?\s*(?:\([^)]*\))?\s*(?:with\s*\([^)]*\)\s*)?as\s+/is.exec(
    statementText,
  );
  const query = match === null ? statementText : statementText.slice(match[0].length);
  // CREATE MATERIALIZED VIEW ... AS query WITH [NO] DATA: the clause is not part of the query (an
  // oxbow materialized view is always populated; pg_dump writes WITH NO DATA and then REFRESH).
  return query.replace(/;\s*$/, '').replace(/\s+with\s+(?:no\s+)?data\s*$/i, '').trim();
}

/**
 * The expression inside `CHECK ( ... )` for a constraint whose text starts at `start` (an offset
 * into the statement text, at CONSTRAINT name or CHECK): the balanced parenthesised text.
 */
export function checkExpressionTextAt(text: string, start: number): string | undefined {
  const match = /check\s*\(/i.exec(text.slice(start));
  if (match === null) return undefined;
  const open = start + match.index + match[0].length;
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    const character = text[index]!;
    if (character === "'" || character === '"') {
      const close = text.indexOf(character, index + 1);
      if (close < 0) return undefined;
      index = close;
    } else if (character === '(') depth++;
    else if (character === ')') {
      if (depth === 0) return text.slice(open, index).trim();
      depth--;
    }
  }
  return undefined;
}
