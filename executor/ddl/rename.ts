// ALTER TABLE | VIEW | MATERIALIZED VIEW | INDEX name RENAME TO new_name (dbt renames a model's
// new relation into place and the old one out of the way). As in PostgreSQL, what reads the
// relation follows it: a view, materialized view or sink keeps its query as text, so each direct
// reader's text is rewritten to name the relation by its new name (its running dataflow already
// reads the relation by id). Renaming a column or a schema is 0A000.

import type { RenameStmt } from '@pgsql/types';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { parse } from '../../sql/parser/index.js';
import { quoteIdentifier } from '../catalog/object-names.js';
import { type DdlContext, type DdlOutcome, kindWord, positionOf, unchanged } from './ddl-context.js';
import { draftOf } from './create-table.js';

const renamable: Readonly<Record<string, { readonly kinds: readonly RelationDef['kind'][]; readonly tag: string }>> = {
  OBJECT_TABLE: { kinds: ['table'], tag: 'ALTER TABLE' },
  OBJECT_VIEW: { kinds: ['view'], tag: 'ALTER VIEW' },
  OBJECT_MATVIEW: { kinds: ['materialized_view'], tag: 'ALTER MATERIALIZED VIEW' },
  OBJECT_INDEX: { kinds: ['index'], tag: 'ALTER INDEX' },
};

export function renameRelation(statement: RenameStmt, context: DdlContext): DdlOutcome {
  const what = renamable[String(statement.renameType)];
  if (what === undefined) {
    const object = String(statement.renameType).replace('OBJECT_', '').toLowerCase();
    throw new SqlError(SqlState.featureNotSupported, `renaming a ${object} is not supported`, { hint: 'oxbow renames tables, views, materialized views and indexes.' });
  }
  const target = statement.relation!;
  const name = target.relname ?? '';
  const relation = context.catalog.resolveRelation(target.schemaname, name, context.searchPath);
  if (relation === undefined) {
    if (statement.missing_ok === true) {
      return unchanged(what.tag, [{ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `relation "${name}" does not exist, skipping` }]);
    }
    throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position: positionOf(context, target.location) });
  }
  // PostgreSQL lets ALTER TABLE rename a view or an index too; ALTER VIEW only a view, and so on.
  if (statement.renameType !== 'OBJECT_TABLE' && !what.kinds.includes(relation.kind)) {
    throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a ${what.tag.slice('ALTER '.length).toLowerCase()}`);
  }
  if (!['table', 'view', 'materialized_view', 'index'].includes(relation.kind)) {
    throw new SqlError(SqlState.featureNotSupported, `renaming a ${kindWord(relation.kind)} is not supported`);
  }
  const newName = statement.newname ?? '';
  if (context.catalog.relation(relation.schema, newName) !== undefined) {
    throw new SqlError(SqlState.duplicateTable, `relation "${newName}" already exists`);
  }
  const draft = draftOf(context);
  draft.putRelation({ ...relation, name: newName });
  for (const reader of context.catalog.dependents(relation.id)) {
    if (reader.definition === undefined || reader.kind === 'index') continue;
    draft.putRelation({ ...reader, definition: renamedIn(reader.definition, relation, newName) });
  }
  return { catalog: draft.finish(), commandTag: what.tag, notices: [], droppedTableIds: [] };
}

const identifier = String.raw`(?:"(?:[^"]|"")*"|[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*)`;
/** A possibly qualified name at the start of a string: [catalog.][schema.]name. */
const qualifiedName = new RegExp(String.raw`^(?:${identifier}\s*\.\s*){0,2}(${identifier})`);

function unquote(part: string): string {
  return part.startsWith('"') ? part.slice(1, -1).replace(/""/g, '"') : part.toLowerCase();
}

/** A query's text with each reference to `relation` (by its old name) naming `newName`. */
function renamedIn(definition: string, relation: RelationDef, newName: string): string {
  let statement;
  try {
    statement = parse(definition)[0];
  } catch {
    return definition;
  }
  if (statement === undefined) return definition;
  const edits: { at: number; length: number }[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'RangeVar') {
        const rangeVar = value as { relname?: string; schemaname?: string; location?: number };
        if (rangeVar.relname === relation.name && (rangeVar.schemaname === undefined || rangeVar.schemaname === relation.schema) && rangeVar.location !== undefined) {
          const at = statement.location + rangeVar.location;
          const match = qualifiedName.exec(definition.slice(at));
          if (match !== null && unquote(match[1]!) === relation.name) edits.push({ at: at + match[0].length - match[1]!.length, length: match[1]!.length });
        }
      }
      visit(value);
    }
  };
  visit(statement.node);
  let renamed = definition;
  for (const edit of edits.sort((a, b) => b.at - a.at)) renamed = `${renamed.slice(0, edit.at)}${quoteIdentifier(newName)}${renamed.slice(edit.at + edit.length)}`;
  return renamed;
}
