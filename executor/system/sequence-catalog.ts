// What the system catalogs say about sequences and about UNIQUE / FOREIGN KEY constraints:
// pg_sequence rows, the pg_sequences view, information_schema.sequences, pg_depend's rows for
// sequences owned by a column (deptype 'a' for serial, 'i' for identity), pg_constraint rows of
// contype 'u' and 'f' with pg_get_constraintdef's text, and the identity columns' attidentity and
// information_schema.columns fields. pg-catalog.ts and information-schema.ts splice these in.

import type { ConstraintDef, RelationDef } from '../../sql/catalog.js';
import { ownerOf } from '../catalog/privileges.js';
import { TYPES } from '../../sql/types.js';
import type { Row, SqlArray } from '../../sql/value.js';
import { systemRelation } from './system-columns.js';
import type { SystemTable } from './pg-catalog.js';
import { attnumOf, CONSTRAINT_OID_OFFSET, PG_CLASS_OID, quoteIdentifier, qualifiedName, roleName, schemaOid, type SystemContext } from './system-context.js';

/** FOREIGN KEY constraints: OID derived from the table id and the constraint's position. */
export const FOREIGN_KEY_OID_OFFSET = 0x50000000;
const FOREIGN_KEYS_PER_TABLE = 64;
const PG_CONSTRAINT_OID = 2606;

const array = (elements: SqlArray['elements']): SqlArray => ({ kind: 'array', elements });

function sequences(context: SystemContext): RelationDef[] {
  return context.catalog.relations().filter((relation) => relation.kind === 'sequence' && relation.sequence !== undefined);
}

const typeWords: Readonly<Record<string, string>> = { int2: 'smallint', int4: 'integer', int8: 'bigint' };
const precisions: Readonly<Record<string, number>> = { int2: 16, int4: 32, int8: 64 };

/** pg_sequence: one row per sequence. */
export function pgSequenceRows(context: SystemContext): Row[] {
  return sequences(context).map((relation) => {
    const s = relation.sequence!;
    return [relation.id, TYPES[s.dataType].oid, BigInt(s.start), BigInt(s.increment), BigInt(s.max), BigInt(s.min), BigInt(s.cache), s.cycle];
  });
}

/** The view pg_sequences (last_value NULL until nextval or setval(..., true)). */
export const pgSequencesTable: SystemTable = {
  def: systemRelation(13160, 'pg_catalog', 'pg_sequences', [
    'schemaname:name', 'sequencename:name', 'sequenceowner:name', 'data_type:regtype', 'start_value:int8', 'min_value:int8',
    'max_value:int8', 'increment_by:int8', 'cycle:bool', 'cache_size:int8', 'last_value:int8',
  ]),
  rows: (context) =>
    sequences(context).map((relation) => {
      const s = relation.sequence!;
      const current = context.sequenceValue?.(relation);
      return [
        relation.schema, relation.name, roleName(context, ownerOf(relation)), TYPES[s.dataType].oid, BigInt(s.start), BigInt(s.min),
        BigInt(s.max), BigInt(s.increment), s.cycle, BigInt(s.cache), current === undefined || !current.called ? null : current.last,
      ];
    }),
};

/** information_schema.sequences. */
export const informationSchemaSequencesTable: SystemTable = {
  def: systemRelation(13161, 'information_schema', 'sequences', [
    'sequence_catalog:name', 'sequence_schema:name', 'sequence_name:name', 'data_type:text', 'numeric_precision:int4',
    'numeric_precision_radix:int4', 'numeric_scale:int4', 'start_value:text', 'minimum_value:text', 'maximum_value:text',
    'increment:text', 'cycle_option:text',
  ]),
  rows: (context) =>
    sequences(context).map((relation) => {
      const s = relation.sequence!;
      return [context.database, relation.schema, relation.name, typeWords[s.dataType]!, precisions[s.dataType]!, 2, 0, s.start, s.min, s.max, s.increment, s.cycle ? 'YES' : 'NO'];
    }),
};

/** pg_depend: a sequence owned by a column depends on it (automatic for serial, internal for identity). */
export function pgDependRows(context: SystemContext): Row[] {
  const rows: Row[] = [];
  for (const relation of sequences(context)) {
    const owner = relation.sequence!.ownedBy;
    if (owner === undefined) continue;
    const table = context.catalog.relationById(owner.relationId);
    if (table === undefined) continue;
    const identity = table.columns[owner.column]?.identity?.sequenceId === relation.id;
    rows.push([PG_CLASS_OID, relation.id, 0, PG_CLASS_OID, table.id, attnumOf(table, owner.column), identity ? 'i' : 'a']);
  }
  for (const table of context.catalog.relations()) {
    for (const [position, constraint] of (table.constraints ?? []).entries()) {
      // The index behind a UNIQUE constraint depends on it (internal), as in PostgreSQL.
      if (constraint.indexId !== undefined) rows.push([PG_CLASS_OID, constraint.indexId, 0, PG_CONSTRAINT_OID, constraintOid(table, constraint, position), 0, 'i']);
    }
  }
  return rows;
}

function constraintOid(table: RelationDef, constraint: ConstraintDef, position: number): number {
  return constraint.indexId !== undefined ? constraint.indexId + CONSTRAINT_OID_OFFSET : FOREIGN_KEY_OID_OFFSET + table.id * FOREIGN_KEYS_PER_TABLE + position;
}

/** pg_constraint rows of UNIQUE ('u') and FOREIGN KEY ('f') constraints (same columns as pg-catalog.ts's pg_constraint). */
export function constraintRows(context: SystemContext): Row[] {
  const rows: Row[] = [];
  for (const table of context.catalog.relations()) {
    for (const [position, constraint] of (table.constraints ?? []).entries()) {
      const key = array(constraint.columns.map((column) => attnumOf(table, column)));
      if (constraint.kind === 'unique') {
        rows.push([
          constraintOid(table, constraint, position), constraint.name, schemaOid(context, table.schema), 'u', false, false, true,
          table.id, 0, constraint.indexId ?? 0, 0, 0, ' ', ' ',
          ' ', true, 0, true, key, null,
          null,
        ]);
        continue;
      }
      const references = constraint.references!;
      const referenced = context.catalog.relationById(references.relationId);
      if (referenced === undefined) continue;
      const index = context.catalog.dependents(referenced.id).find((candidate) => candidate.kind === 'index' && candidate.indexOn?.unique === true && sameSet(candidate.indexOn.columns, references.columns));
      rows.push([
        constraintOid(table, constraint, position), constraint.name, schemaOid(context, table.schema), 'f', references.deferrable === true, references.initiallyDeferred === true, true,
        table.id, 0, index?.id ?? 0, 0, referenced.id, references.onUpdate, references.onDelete,
        references.match, true, 0, true, key, array(references.columns.map((column) => attnumOf(referenced, column))),
        null,
      ]);
    }
  }
  return rows;
}

function sameSet(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((column) => b.includes(column));
}

const actionWords: Readonly<Record<string, string>> = { r: 'RESTRICT', c: 'CASCADE', n: 'SET NULL', d: 'SET DEFAULT' };

/** pg_get_constraintdef of a UNIQUE or FOREIGN KEY constraint, as PostgreSQL 15 prints it. */
export function constraintDefinitionOf(context: SystemContext, oid: number): string | undefined {
  for (const table of context.catalog.relations()) {
    for (const [position, constraint] of (table.constraints ?? []).entries()) {
      if (constraintOid(table, constraint, position) !== oid) continue;
      const names = (relation: RelationDef, columns: readonly number[]) => columns.map((column) => quoteIdentifier(relation.columns[column]?.name ?? '?')).join(', ');
      if (constraint.kind === 'unique') return `UNIQUE (${names(table, constraint.columns)})`;
      const references = constraint.references!;
      const referenced = context.catalog.relationById(references.relationId);
      if (referenced === undefined) return undefined;
      let text = `FOREIGN KEY (${names(table, constraint.columns)}) REFERENCES ${qualifiedName(context, referenced, true)}(${names(referenced, references.columns)})`;
      if (references.match === 'f') text += ' MATCH FULL';
      if (references.onUpdate !== 'a') text += ` ON UPDATE ${actionWords[references.onUpdate]}`;
      if (references.onDelete !== 'a') text += ` ON DELETE ${actionWords[references.onDelete]}`;
      if (references.deferrable === true) text += references.initiallyDeferred === true ? ' DEFERRABLE INITIALLY DEFERRED' : ' DEFERRABLE';
      return text;
    }
  }
  return undefined;
}

/**
 * The tables on either side of a foreign key: PostgreSQL gives them its RI triggers, so their
 * pg_class.relhastriggers is true (psql's \d looks for foreign keys only then).
 */
export function foreignKeyTables(context: SystemContext): Set<number> {
  const ids = new Set<number>();
  for (const table of context.catalog.relations()) {
    for (const constraint of table.constraints ?? []) {
      if (constraint.kind !== 'foreign_key') continue;
      ids.add(table.id);
      ids.add(constraint.references!.relationId);
    }
  }
  return ids;
}

/** pg_attribute.attidentity of a column: 'a' (ALWAYS), 'd' (BY DEFAULT) or ''. */
export function attidentity(column: { readonly identity?: { readonly kind: string } }): string {
  return column.identity === undefined ? '' : column.identity.kind === 'always' ? 'a' : 'd';
}

/** information_schema.columns' identity fields: is_identity, identity_generation, start, increment, maximum, minimum, cycle. */
export function identityFields(context: SystemContext, column: { readonly identity?: { readonly kind: string; readonly sequenceId: number } }): Row {
  const sequence = column.identity === undefined ? undefined : context.catalog.relationById(column.identity.sequenceId)?.sequence;
  if (column.identity === undefined || sequence === undefined) return ['NO', null, null, null, null, null, 'NO'];
  return ['YES', column.identity.kind === 'always' ? 'ALWAYS' : 'BY DEFAULT', sequence.start, sequence.increment, sequence.max, sequence.min, sequence.cycle ? 'YES' : 'NO'];
}

