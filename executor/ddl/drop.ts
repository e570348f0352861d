// DROP TABLE / VIEW / MATERIALIZED VIEW / INDEX / SOURCE / SINK / SCHEMA [IF EXISTS] [CASCADE | RESTRICT], with
// PostgreSQL's dependency rules and message texts: dependents block a RESTRICT drop (2BP01 with a
// DETAIL line per dependent and the CASCADE hint); CASCADE drops them too and says so in a NOTICE.
// A table's own indexes go with it silently (PostgreSQL's automatic dependency); the index behind
// a primary key cannot be dropped on its own.

import type { DropStmt, Node } from '@pgsql/types';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Notice } from '../catalog/results.js';
import { type DdlContext, type DdlOutcome, kindWord } from './ddl-context.js';
import { draftOf } from './create-table.js';
import { nameList, stringValue } from './sql-text.js';
import { formatTypeName } from '../catalog/type-names.js';
import { sequenceUsers } from './sequence.js';

type DropKind = 'table' | 'view' | 'materialized_view' | 'index' | 'sink' | 'source' | 'sequence';

const removeTypes: Readonly<Record<string, DropKind | 'schema'>> = {
  OBJECT_TABLE: 'table',
  OBJECT_VIEW: 'view',
  OBJECT_MATVIEW: 'materialized_view',
  OBJECT_INDEX: 'index',
  OBJECT_SEQUENCE: 'sequence',
  OBJECT_SCHEMA: 'schema',
};

const commandTags: Readonly<Record<DropKind | 'schema', string>> = {
  table: 'DROP TABLE',
  view: 'DROP VIEW',
  materialized_view: 'DROP MATERIALIZED VIEW',
  index: 'DROP INDEX',
  sequence: 'DROP SEQUENCE',
  sink: 'DROP SINK',
  source: 'DROP SOURCE',
  schema: 'DROP SCHEMA',
};

const dropHints: Readonly<Record<string, string>> = {
  table: 'Use DROP TABLE to remove a table.',
  view: 'Use DROP VIEW to remove a view.',
  materialized_view: 'Use DROP MATERIALIZED VIEW to remove a materialized view.',
  index: 'Use DROP INDEX to remove an index.',
  sequence: 'Use DROP SEQUENCE to remove a sequence.',
  source: 'Use DROP SOURCE to remove a source.',
  sink: 'Use DROP SINK to remove a sink.',
};

/** "view v" or "view s.v": qualified when the name is not visible through the search path. */
export function describeRelation(relation: RelationDef, context: DdlContext): string {
  return describe(relation, context);
}

function describe(relation: RelationDef, context: DdlContext): string {
  const visible = context.catalog.resolveRelation(undefined, relation.name, context.searchPath)?.id === relation.id;
  return `${kindWord(relation.kind)} ${visible ? relation.name : `${relation.schema}.${relation.name}`}`;
}

/**
 * True for an index that exists only because of its table, or a sequence the table owns (a serial
 * or identity column's): dropped with it, without a notice.
 */
function isOwnIndex(relation: RelationDef, of: RelationDef): boolean {
  if (relation.kind === 'sequence') return relation.sequence?.ownedBy?.relationId === of.id;
  return relation.kind === 'index' && relation.indexOn?.relationId === of.id;
}

/** `view w depends on view v` lines for every transitive dependent of `relation` (indexes aside). */
export function dependencyLines(relation: RelationDef, context: DdlContext): string[] {
  const lines: string[] = [];
  const seen = new Set<number>([relation.id]);
  const visit = (target: RelationDef): void => {
    for (const dependent of context.catalog.dependents(target.id)) {
      if (isOwnIndex(dependent, target) || seen.has(dependent.id)) continue;
      seen.add(dependent.id);
      lines.push(`${describe(dependent, context)} depends on ${describe(target, context)}`);
      visit(dependent);
    }
  };
  visit(relation);
  return lines;
}

export interface DropPlan {
  /** Relations to remove, in the order found. */
  readonly relations: Map<number, RelationDef>;
  /** Dependents dropped by CASCADE that PostgreSQL reports (not automatic indexes). */
  readonly reported: RelationDef[];
}

/** Adds `relation` and, transitively, what depends on it; throws 2BP01 when RESTRICT forbids it. */
export function collect(relation: RelationDef, cascade: boolean, context: DdlContext, plan: DropPlan, root: string): void {
  if (plan.relations.has(relation.id)) return;
  plan.relations.set(relation.id, relation);
  const blockers: RelationDef[] = [];
  for (const dependent of context.catalog.dependents(relation.id)) {
    if (plan.relations.has(dependent.id)) continue;
    if (isOwnIndex(dependent, relation)) {
      collect(dependent, true, context, plan, root);
      continue;
    }
    blockers.push(dependent);
  }
  if (blockers.length === 0) return;
  if (!cascade) {
    // PostgreSQL lists every object the CASCADE would drop, each with what it depends on.
    throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop ${root} because other objects depend on it`, {
      detail: dependencyLines(relation, context).join('\n'),
      hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
    });
  }
  for (const blocker of blockers) {
    if (plan.relations.has(blocker.id)) continue;
    plan.reported.push(blocker);
    collect(blocker, true, context, plan, root);
  }
}

function cascadeNotice(reported: readonly RelationDef[], context: DdlContext): Notice[] {
  if (reported.length === 0) return [];
  const lines = reported.map((relation) => `drop cascades to ${describe(relation, context)}`);
  if (lines.length === 1) return [{ severity: 'NOTICE', code: SqlState.successfulCompletion, message: lines[0]! }];
  return [
    {
      severity: 'NOTICE',
      code: SqlState.successfulCompletion,
      message: `drop cascades to ${lines.length} other objects`,
      detail: lines.join('\n'),
    },
  ];
}

function missingRelation(kind: DropKind, name: string): SqlError {
  const word = kindWord(kind);
  return new SqlError(kind === 'index' ? SqlState.undefinedObject : SqlState.undefinedTable, `${word} "${name}" does not exist`);
}

export function drop(statement: DropStmt, context: DdlContext): DdlOutcome {
  // DROP SINK arrives as DROP VIEW, DROP SOURCE as DROP TABLE, marked by the parser; each drops
  // only its own kind (DROP TABLE on a source is 42809 with a hint, like PostgreSQL's DROP TABLE
  // on a view).
  const objectType = (statement as { oxbowObjectType?: string }).oxbowObjectType;
  const kind = objectType === 'sink' ? 'sink' : objectType === 'source' ? 'source' : removeTypes[statement.removeType ?? ''];
  if (kind === undefined) {
    throw new SqlError(SqlState.featureNotSupported, `DROP ${String(statement.removeType).replace('OBJECT_', '')} is not supported`);
  }
  const cascade = statement.behavior === 'DROP_CASCADE';
  const missingOk = statement.missing_ok === true;
  const notices: Notice[] = [];
  const plan: DropPlan = { relations: new Map(), reported: [] };
  const droppedSchemas: string[] = [];
  /** DROP SEQUENCE ... CASCADE: the column defaults that call nextval on it. */
  const droppedDefaults: { tableId: number; columnIndex: number; line: string }[] = [];

  for (const object of statement.objects ?? []) {
    if (kind === 'schema') {
      const name = stringValue(object as Node);
      const schema = context.catalog.schema(name);
      if (schema === undefined) {
        if (missingOk) {
          notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `schema "${name}" does not exist, skipping` });
          continue;
        }
        throw new SqlError(SqlState.invalidSchemaName, `schema "${name}" does not exist`);
      }
      if (name === 'pg_catalog' || name === 'information_schema' || name === 'oxbow_catalog') {
        throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop schema ${name} because it is required by the database system`);
      }
      const members = context.catalog.relations().filter((relation) => relation.schema === name);
      const direct = members.filter((relation) => relation.kind !== 'index' || relation.indexOn?.primary !== true);
      const functions = context.catalog.functions().filter((fn) => fn.schema === name);
      if (direct.length + functions.length > 0 && !cascade) {
        throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop schema ${name} because other objects depend on it`, {
          detail: [
            ...direct.map((relation) => `${kindWord(relation.kind)} ${relation.schema}.${relation.name} depends on schema ${name}`),
            ...functions.map((fn) => `function ${fn.schema}.${fn.name}(${fn.argumentTypes.map(formatTypeName).join(',')}) depends on schema ${name}`),
          ].join('\n'),
          hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
        });
      }
      for (const relation of members) {
        if (plan.relations.has(relation.id)) continue;
        if (relation.kind !== 'index') plan.reported.push(relation);
        collect(relation, true, context, plan, `schema ${name}`);
      }
      // Views elsewhere that call the schema's SQL functions go with them.
      for (const fn of functions) {
        for (const dependent of context.catalog.dependents(fn.id)) {
          if (plan.relations.has(dependent.id)) continue;
          plan.reported.push(dependent);
          collect(dependent, true, context, plan, `schema ${name}`);
        }
      }
      droppedSchemas.push(name);
      continue;
    }
    const names = nameList(object as Node);
    const name = names[names.length - 1] ?? '';
    const schema = names.length > 1 ? names[names.length - 2] : undefined;
    const relation = context.catalog.resolveRelation(schema, name, context.searchPath);
    if (relation === undefined) {
      if (missingOk) {
        notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `${kindWord(kind)} "${name}" does not exist, skipping` });
        continue;
      }
      throw missingRelation(kind, name);
    }
    if (relation.kind === 'system') {
      throw new SqlError(SqlState.insufficientPrivilege, `permission denied: "${name}" is a system catalog`);
    }
    if (relation.kind !== kind) {
      throw new SqlError(SqlState.wrongObjectType, `"${name}" is not ${kind === 'index' ? 'an' : 'a'} ${kindWord(kind)}`, {
        hint: dropHints[relation.kind],
      });
    }
    const constraintOwner = relation.kind === 'index' ? context.catalog.relationById(relation.indexOn?.relationId ?? -1) : undefined;
    if (relation.kind === 'index' && (relation.indexOn?.primary === true || constraintOwner?.constraints?.some((constraint) => constraint.indexId === relation.id) === true)) {
      const table = context.catalog.relationById(relation.indexOn!.relationId);
      const tableName = table === undefined ? '' : table.name;
      throw new SqlError(
        SqlState.dependentObjectsStillExist,
        `cannot drop index ${relation.name} because constraint ${relation.name} on table ${tableName} requires it`,
        { hint: `You can drop constraint ${relation.name} on table ${tableName} instead.` },
      );
    }
    if (relation.kind === 'sequence') {
      // Defaults that call nextval on it block a RESTRICT drop; CASCADE drops those defaults.
      const users = sequenceUsers(relation, context);
      const identity = users.find((user) => user.identity);
      if (identity !== undefined) {
        throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop sequence ${relation.name} because column ${identity.column} of table ${identity.table.name} requires it`, {
          hint: `You can drop column ${identity.column} of table ${identity.table.name} instead.`,
        });
      }
      const lines = users.filter((user) => !plan.relations.has(user.table.id)).map((user) => `default value for column ${user.column} of table ${user.table.name}`);
      if (lines.length > 0 && !cascade) {
        throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop sequence ${relation.name} because other objects depend on it`, {
          detail: lines.map((line) => `${line} depends on sequence ${relation.name}`).join('\n'),
          hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
        });
      }
      for (const user of users) droppedDefaults.push({ tableId: user.table.id, columnIndex: user.columnIndex, line: `default value for column ${user.column} of table ${user.table.name}` });
    }
    collect(relation, cascade, context, plan, `${kindWord(relation.kind)} ${relation.name}`);
  }

  if (plan.relations.size === 0 && droppedSchemas.length === 0) return { catalog: undefined, commandTag: commandTags[kind], notices, droppedTableIds: [] };
  // Sequences a dropped table owned, whose nextval another table's DEFAULT calls: 2BP01, or CASCADE drops the default.
  if (kind !== 'sequence') {
    const lines: string[] = [];
    for (const sequence of plan.relations.values()) {
      if (sequence.kind !== 'sequence') continue;
      for (const user of sequenceUsers(sequence, context)) {
        if (plan.relations.has(user.table.id) || user.identity) continue;
        lines.push(`default value for column ${user.column} of table ${user.table.name} depends on sequence ${sequence.name}`);
        droppedDefaults.push({ tableId: user.table.id, columnIndex: user.columnIndex, line: `default value for column ${user.column} of table ${user.table.name}` });
      }
    }
    if (lines.length > 0 && !cascade) {
      const root = [...plan.relations.values()][0]!;
      throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop ${describe(root, context)} because other objects depend on it`, {
        detail: lines.join('\n'),
        hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
      });
    }
  }
  // FOREIGN KEY constraints of other tables that reference a dropped table: 2BP01, or dropped by CASCADE.
  const referencing: { table: RelationDef; name: string; line: string }[] = [];
  for (const table of context.catalog.relations()) {
    if (plan.relations.has(table.id)) continue;
    for (const constraint of table.constraints ?? []) {
      const parent = constraint.kind === 'foreign_key' ? plan.relations.get(constraint.references!.relationId) : undefined;
      if (parent !== undefined) referencing.push({ table, name: constraint.name, line: `constraint ${constraint.name} on table ${table.name} depends on ${describe(parent, context)}` });
    }
  }
  if (referencing.length > 0 && !cascade) {
    const root = [...plan.relations.values()][0]!;
    throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop ${describe(root, context)} because other objects depend on it`, {
      detail: referencing.map((entry) => entry.line).join('\n'),
      hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
    });
  }
  for (const entry of referencing) droppedDefaults.push({ tableId: -1, columnIndex: -1, line: `constraint ${entry.name} on table ${entry.table.name}` });
  notices.push(...cascadeNotice(plan.reported, context));
  // Cascaded column defaults (DROP SEQUENCE) and foreign keys (tableId -1), reported together.
  const cascadedDefaults = droppedDefaults.filter((dropped) => !plan.relations.has(dropped.tableId));
  if (cascadedDefaults.length === 1) notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `drop cascades to ${cascadedDefaults[0]!.line}` });
  if (cascadedDefaults.length > 1) {
    notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `drop cascades to ${cascadedDefaults.length} other objects`, detail: cascadedDefaults.map((dropped) => `drop cascades to ${dropped.line}`).join('\n') });
  }
  const draft = draftOf(context);
  for (const entry of referencing) {
    const table = draft.finish().relationById(entry.table.id)!;
    const constraints = (table.constraints ?? []).filter((constraint) => constraint.name !== entry.name);
    const { constraints: _all, ...rest } = table;
    draft.putRelation(constraints.length === 0 ? rest : { ...rest, constraints });
  }
  for (const dropped of cascadedDefaults) {
    if (dropped.tableId < 0) continue;
    const table = draft.finish().relationById(dropped.tableId)!;
    const { defaultSql: _removed, ...column } = table.columns[dropped.columnIndex]!;
    draft.putRelation({ ...table, columns: table.columns.map((candidate, index) => (index === dropped.columnIndex ? column : candidate)) });
  }
  for (const relation of plan.relations.values()) draft.removeRelation(relation.id);
  // A dropped schema's SQL functions go with it (DROP SCHEMA CASCADE).
  for (const fn of context.catalog.functions()) if (droppedSchemas.includes(fn.schema)) draft.removeFunction(fn.id);
  for (const schema of droppedSchemas) draft.removeSchema(schema);
  return { catalog: draft.finish(), commandTag: commandTags[kind], notices, droppedTableIds: droppedStateTables(plan.relations.values()) };
}

/** The state tables that go with dropped relations. */
export function droppedStateTables(relations: Iterable<RelationDef>): number[] {
  const droppedTableIds: number[] = [];
  for (const relation of relations) {
    if (relation.kind === 'table' || relation.kind === 'materialized_view' || relation.kind === 'source' || relation.stream !== undefined) droppedTableIds.push(relation.id);
    // A stored secondary index has its own state table (executor/catalog/secondary-index.ts).
    if (relation.kind === 'index' && relation.indexOn?.stored === true) droppedTableIds.push(relation.id);
    // A materialized view's dataflow state goes with it (executor/stream/).
    if (relation.stream !== undefined) droppedTableIds.push(...relation.stream.stateTableIds);
    // A sink AS query's change log (executor/stream/change-log.ts).
    if (relation.stream?.changeLog !== undefined) droppedTableIds.push(relation.stream.changeLog.tableId);
  }
  return droppedTableIds;
}
