// CREATE SEQUENCE [IF NOT EXISTS], ALTER SEQUENCE, DROP SEQUENCE's kind, and the sequences that
// serial / bigserial / smallserial and identity columns own. Options are checked as PostgreSQL's
// init_params checks them (same SQLSTATEs and messages): AS smallint | integer | bigint,
// INCREMENT (not zero), MINVALUE / MAXVALUE / NO ..., START, RESTART [WITH], CACHE, [NO] CYCLE,
// OWNED BY table.column | NONE. The values live in the engine's sequence runtime
// (catalog/sequence-runtime.ts); ALTER SEQUENCE RESTART hands it the value to set once the DDL
// commits (ddl-statement.ts).

import type { AlterSeqStmt, Constraint, CreateSeqStmt, DefElem, Node, RangeVar, TypeName } from '@pgsql/types';
import type { ColumnDef, RelationDef, SequenceDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { dataTypeFromTypeName } from '../catalog/type-names.js';
import type { CatalogDraft } from '../catalog/catalog.js';
import { type DdlContext, type DdlOutcome, positionOf, unchanged } from './ddl-context.js';
import { creationSchema, stringValue } from './sql-text.js';
import { draftOf, freeRelationName } from './create-table.js';
import { quoteIdentifier } from '../catalog/object-names.js';
import { nextvalTarget } from '../catalog/sequence-defaults.js';

type IntegerType = SequenceDef['dataType'];

const typeBounds: Readonly<Record<IntegerType, { min: bigint; max: bigint; word: string }>> = {
  int2: { min: -32768n, max: 32767n, word: 'smallint' },
  int4: { min: -2147483648n, max: 2147483647n, word: 'integer' },
  int8: { min: -9223372036854775808n, max: 9223372036854775807n, word: 'bigint' },
};

const invalid = (message: string, position?: number): SqlError => new SqlError(SqlState.invalidParameterValue, message, { position });

function integerOf(element: DefElem): bigint {
  const arg = element.arg as { Integer?: { ival?: number }; Float?: { fval?: string } } | undefined;
  if (arg?.Integer !== undefined) return BigInt(arg.Integer.ival ?? 0);
  if (arg?.Float?.fval !== undefined && /^-?\d+$/.test(arg.Float.fval)) return BigInt(arg.Float.fval);
  throw new SqlError(SqlState.syntaxError, `${element.defname} requires a numeric value`);
}

/** The options of a CREATE / ALTER SEQUENCE (or an identity column's), by name, duplicates refused. */
function optionMap(options: readonly Node[] | undefined, context: DdlContext): Map<string, DefElem> {
  const map = new Map<string, DefElem>();
  for (const node of options ?? []) {
    const element = (node as { DefElem: DefElem }).DefElem;
    const name = element.defname ?? '';
    if (map.has(name)) throw new SqlError(SqlState.syntaxError, 'conflicting or redundant options', { position: positionOf(context, element.location) });
    map.set(name, element);
  }
  return map;
}

export interface SequenceSpec {
  readonly def: SequenceDef;
  /** ALTER SEQUENCE RESTART [WITH]: the value the runtime restarts at. */
  readonly restart?: bigint;
  /** OWNED BY: [table..., column] names, or 'none'. */
  readonly ownedBy?: readonly string[] | 'none';
  /** An identity column's SEQUENCE NAME [schema.]name (pg_dump names it). */
  readonly sequenceName?: string;
}

/**
 * PostgreSQL's init_params: the options over `previous` (ALTER) or the defaults (CREATE), with
 * `dataType` the column's type for serial and identity columns.
 */
export function sequenceSpec(options: readonly Node[] | undefined, context: DdlContext, previous?: SequenceDef, dataType?: IntegerType): SequenceSpec {
  const map = optionMap(options, context);
  let type: IntegerType = dataType ?? previous?.dataType ?? 'int8';
  const as = map.get('as');
  if (as !== undefined) {
    const given = dataTypeFromTypeName((as.arg as { TypeName: TypeName }).TypeName);
    if (given.name !== 'int2' && given.name !== 'int4' && given.name !== 'int8') {
      throw invalid('sequence type must be smallint, integer, or bigint', positionOf(context, as.location));
    }
    type = given.name;
  }
  const bounds = typeBounds[type];
  const increment = map.has('increment') ? integerOf(map.get('increment')!) : previous === undefined ? 1n : BigInt(previous.increment);
  if (increment === 0n) throw invalid('INCREMENT must not be zero');
  const typeChanged = previous !== undefined && previous.dataType !== type;
  const previousMax = previous === undefined ? undefined : BigInt(previous.max);
  const previousMin = previous === undefined ? undefined : BigInt(previous.min);
  const bound = (name: 'maxvalue' | 'minvalue', old: bigint | undefined, oldTypeBound: bigint): bigint => {
    const element = map.get(name);
    if (element !== undefined && element.arg !== undefined) return integerOf(element);
    const defaultValue = name === 'maxvalue' ? (increment > 0n ? bounds.max : -1n) : increment > 0n ? 1n : bounds.min;
    if (element !== undefined || old === undefined) return defaultValue;
    // ALTER ... AS: a bound at the old type's limit follows the type (PostgreSQL).
    if (typeChanged && old === oldTypeBound) return defaultValue;
    return old;
  };
  const previousBounds = previous === undefined ? undefined : typeBounds[previous.dataType];
  const max = bound('maxvalue', previousMax, previousBounds?.max ?? 0n);
  const min = bound('minvalue', previousMin, previousBounds?.min ?? 0n);
  if (max < bounds.min || max > bounds.max) throw invalid(`MAXVALUE (${max}) is out of range for sequence data type ${bounds.word}`);
  if (min < bounds.min || min > bounds.max) throw invalid(`MINVALUE (${min}) is out of range for sequence data type ${bounds.word}`);
  if (min >= max) throw invalid(`MINVALUE (${min}) must be less than MAXVALUE (${max})`);
  const start = map.has('start') ? integerOf(map.get('start')!) : previous === undefined ? (increment > 0n ? min : max) : BigInt(previous.start);
  if (start < min) throw invalid(`START value (${start}) cannot be less than MINVALUE (${min})`);
  if (start > max) throw invalid(`START value (${start}) cannot be greater than MAXVALUE (${max})`);
  let restart: bigint | undefined;
  const restartOption = map.get('restart');
  if (restartOption !== undefined) {
    restart = restartOption.arg === undefined ? start : integerOf(restartOption);
    if (restart < min) throw invalid(`RESTART value (${restart}) cannot be less than MINVALUE (${min})`);
    if (restart > max) throw invalid(`RESTART value (${restart}) cannot be greater than MAXVALUE (${max})`);
  }
  const cache = map.has('cache') ? integerOf(map.get('cache')!) : previous === undefined ? 1n : BigInt(previous.cache);
  if (cache <= 0n) throw invalid(`CACHE (${cache}) must be greater than zero`);
  const cycleOption = map.get('cycle');
  const cycle = cycleOption === undefined ? previous?.cycle ?? false : (cycleOption.arg as { Boolean?: { boolval?: boolean } } | undefined)?.Boolean?.boolval === true;
  const owned = map.get('owned_by');
  let ownedBy: SequenceSpec['ownedBy'];
  if (owned !== undefined) {
    const names = ((owned.arg as { List?: { items?: Node[] } }).List?.items ?? []).map(stringValue);
    if (names.length === 1 && names[0] === 'none') ownedBy = 'none';
    else if (names.length < 2) {
      throw new SqlError(SqlState.syntaxError, 'invalid OWNED BY option', { hint: 'Specify OWNED BY table.column or OWNED BY NONE.' });
    } else ownedBy = names;
  }
  for (const name of map.keys()) {
    if (!['as', 'increment', 'maxvalue', 'minvalue', 'start', 'restart', 'cache', 'cycle', 'owned_by', 'sequence_name'].includes(name)) {
      throw new SqlError(SqlState.featureNotSupported, `sequence option "${name}" is not supported`);
    }
  }
  const def: SequenceDef = {
    dataType: type,
    start: String(start),
    increment: String(increment),
    min: String(min),
    max: String(max),
    cache: String(cache),
    cycle,
    ...(previous?.ownedBy === undefined ? {} : { ownedBy: previous.ownedBy }),
  };
  const named = map.get('sequence_name');
  const sequenceName = named === undefined ? undefined : ((named.arg as { List?: { items?: Node[] } }).List?.items ?? []).map(stringValue).pop();
  return { def, ...(restart === undefined ? {} : { restart }), ...(ownedBy === undefined ? {} : { ownedBy }), ...(sequenceName === undefined ? {} : { sequenceName }) };
}

/** OWNED BY table.column: the table (same schema as the sequence, PostgreSQL's rule) and the column. */
function resolveOwner(names: readonly string[], schema: string, context: DdlContext): { relation: RelationDef; column: number } {
  const column = names[names.length - 1]!;
  const tableName = names[names.length - 2]!;
  const tableSchema = names.length > 2 ? names[names.length - 3] : undefined;
  const relation = context.catalog.resolveRelation(tableSchema, tableName, context.searchPath);
  if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${names.slice(0, -1).join('.')}" does not exist`);
  if (relation.kind !== 'table') {
    throw new SqlError(SqlState.wrongObjectType, `sequence cannot be owned by relation "${relation.name}"`, { detail: `This operation is not supported for ${relation.kind === 'materialized_view' ? 'materialized views' : `${relation.kind}s`}.` });
  }
  if (relation.schema !== schema) throw new SqlError(SqlState.objectNotInPrerequisiteState, 'sequence must be in same schema as table it is linked to');
  const index = relation.columns.findIndex((candidate) => candidate.name === column && !candidate.hidden);
  if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${column}" of relation "${relation.name}" does not exist`);
  return { relation, column: index };
}

function withOwner(def: SequenceDef, ownedBy: { relationId: number; column: number } | undefined): SequenceDef {
  const { ownedBy: _previous, ...rest } = def;
  return ownedBy === undefined ? rest : { ...rest, ownedBy };
}

/** A sequence relation (no columns: its values are the runtime's). Depends on its owning table. */
export function sequenceRelation(id: number, schema: string, name: string, def: SequenceDef): RelationDef {
  return { id, kind: 'sequence', schema, name, columns: [], primaryKey: [], dependsOn: def.ownedBy === undefined ? [] : [def.ownedBy.relationId], sequence: def };
}

export function createSequence(statement: CreateSeqStmt, context: DdlContext): DdlOutcome {
  const relation = statement.sequence as RangeVar;
  const name = relation.relname ?? '';
  if (relation.relpersistence === 't') throw new SqlError(SqlState.featureNotSupported, 'temporary sequences are not supported', { position: positionOf(context, relation.location) });
  const schema = creationSchema(context, relation);
  if (context.catalog.relation(schema, name) !== undefined) {
    if (statement.if_not_exists === true) {
      return unchanged('CREATE SEQUENCE', [{ severity: 'NOTICE', code: SqlState.duplicateTable, message: `relation "${name}" already exists, skipping` }]);
    }
    throw new SqlError(SqlState.duplicateTable, `relation "${name}" already exists`);
  }
  const spec = sequenceSpec(statement.options as Node[] | undefined, context);
  let def = spec.def;
  if (spec.ownedBy !== undefined && spec.ownedBy !== 'none') {
    const owner = resolveOwner(spec.ownedBy, schema, context);
    def = withOwner(def, { relationId: owner.relation.id, column: owner.column });
  }
  const draft = draftOf(context);
  draft.putRelation(sequenceRelation(draft.allocateId(), schema, name, def));
  return { catalog: draft.finish(), commandTag: 'CREATE SEQUENCE', notices: [], droppedTableIds: [] };
}

export function alterSequence(statement: AlterSeqStmt, context: DdlContext): DdlOutcome {
  const target = statement.sequence as RangeVar;
  const name = target.relname ?? '';
  const relation = context.catalog.resolveRelation(target.schemaname, name, context.searchPath);
  if (relation === undefined) {
    if (statement.missing_ok === true) {
      return unchanged('ALTER SEQUENCE', [{ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `relation "${name}" does not exist, skipping` }]);
    }
    throw new SqlError(SqlState.undefinedTable, `relation "${name}" does not exist`, { position: positionOf(context, target.location) });
  }
  if (relation.kind !== 'sequence') throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a sequence`);
  const spec = sequenceSpec(statement.options as Node[] | undefined, context, relation.sequence);
  let def = spec.def;
  if (spec.ownedBy === 'none') def = withOwner(def, undefined);
  else if (spec.ownedBy !== undefined) {
    const owner = resolveOwner(spec.ownedBy, relation.schema, context);
    def = withOwner(def, { relationId: owner.relation.id, column: owner.column });
  }
  const draft = draftOf(context);
  draft.putRelation(sequenceRelation(relation.id, relation.schema, relation.name, def));
  return {
    catalog: draft.finish(),
    commandTag: 'ALTER SEQUENCE',
    notices: [],
    droppedTableIds: [],
    sequenceChange: { id: relation.id, ...(spec.restart === undefined ? {} : { restart: spec.restart }) },
  };
}

/**
 * The columns whose values come from `sequence`: DEFAULT nextval('sequence'::regclass) (the name
 * resolved through the search path) and identity columns, in catalog order.
 */
export function sequenceUsers(sequence: RelationDef, context: DdlContext): { table: RelationDef; column: string; columnIndex: number; identity: boolean }[] {
  const users: { table: RelationDef; column: string; columnIndex: number; identity: boolean }[] = [];
  for (const table of context.catalog.relations()) {
    if (table.kind !== 'table') continue;
    table.columns.forEach((column, columnIndex) => {
      if (column.identity?.sequenceId === sequence.id) {
        users.push({ table, column: column.name, columnIndex, identity: true });
        return;
      }
      const target = nextvalTarget(column.defaultSql);
      if (target === undefined) return;
      const parts = target.split('.').map((part) => (part.startsWith('"') ? part.slice(1, -1).replace(/""/g, '"') : part.toLowerCase()));
      const resolved = /^\d+$/.test(target) ? context.catalog.relationById(Number(target)) : context.catalog.resolveRelation(parts.length > 1 ? parts[0] : undefined, parts[parts.length - 1]!, context.searchPath);
      if (resolved?.id === sequence.id) users.push({ table, column: column.name, columnIndex, identity: false });
    });
  }
  return users;
}

/** serial / bigserial / smallserial: the column's integer type, or undefined for another type name. */
export function serialType(typeName: TypeName): IntegerType | undefined {
  const names = (typeName.names ?? []).map(stringValue);
  if (names.length !== 1 || (typeName.arrayBounds?.length ?? 0) > 0) return undefined;
  switch (names[0]) {
    case 'serial':
    case 'serial4':
      return 'int4';
    case 'bigserial':
    case 'serial8':
      return 'int8';
    case 'smallserial':
    case 'serial2':
      return 'int2';
    default:
      return undefined;
  }
}

/**
 * The sequence a serial or identity column owns (`<table>_<column>_seq`, PostgreSQL's name with a
 * numeric suffix when taken), added to `draft`; returns its id and the name as a regclass literal
 * would print it from the table's schema.
 */
export function addOwnedSequence(
  draft: CatalogDraft,
  context: DdlContext,
  table: { readonly id: number; readonly schema: string; readonly name: string },
  column: { readonly name: string; readonly index: number },
  def: SequenceDef,
  explicitName?: string,
): { id: number; name: string } {
  if (explicitName !== undefined && draft.finish().relation(table.schema, explicitName) !== undefined) {
    throw new SqlError(SqlState.duplicateTable, `relation "${explicitName}" already exists`);
  }
  const name = explicitName ?? freeRelationName(draft.finish(), table.schema, `${table.name}_${column.name}_seq`);
  const id = draft.allocateId();
  draft.putRelation(sequenceRelation(id, table.schema, name, withOwner(def, { relationId: table.id, column: column.index })));
  const visible = context.searchPath.find((schema) => schema !== 'pg_catalog' && context.catalog.schema(schema) !== undefined) === table.schema;
  return { id, name: visible ? quoteIdentifier(name) : `${quoteIdentifier(table.schema)}.${quoteIdentifier(name)}` };
}

/**
 * A DEFAULT of the form nextval('[schema.]name'[::regclass]) as PostgreSQL shows it once stored:
 * nextval('name'::regclass), the name qualified only when the search path does not find it.
 * Another text, or a sequence that does not exist, comes back unchanged.
 */
export function normalizedDefault(defaultSql: string, context: DdlContext): string {
  const target = nextvalTarget(defaultSql);
  if (target === undefined || /^\d+$/.test(target)) return defaultSql;
  const parts = target.split('.').map((part) => (part.startsWith('"') ? part.slice(1, -1).replace(/""/g, '"') : part.toLowerCase()));
  const sequence = context.catalog.resolveRelation(parts.length > 1 ? parts[0] : undefined, parts[parts.length - 1]!, context.searchPath);
  if (sequence?.kind !== 'sequence') return defaultSql;
  const visible = context.catalog.resolveRelation(undefined, sequence.name, context.searchPath)?.id === sequence.id;
  return serialDefault(visible ? quoteIdentifier(sequence.name) : `${quoteIdentifier(sequence.schema)}.${quoteIdentifier(sequence.name)}`);
}

/** The DEFAULT of a serial column. */
export function serialDefault(sequenceName: string): string {
  return `nextval('${sequenceName.replace(/'/g, "''")}'::regclass)`;
}

/**
 * ALTER TABLE t ALTER COLUMN c ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)] (how
 * pg_dump restores an identity column): the column must be NOT NULL, without a default, not yet
 * an identity column (55000 otherwise, as PostgreSQL says).
 */
export function addIdentity(relation: RelationDef, columnName: string, constraint: Constraint, context: DdlContext): DdlOutcome {
  const index = relation.columns.findIndex((column) => column.name === columnName && !column.hidden);
  if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${columnName}" of relation "${relation.name}" does not exist`);
  const column = relation.columns[index]!;
  const refuse = (what: string) => new SqlError(SqlState.objectNotInPrerequisiteState, `column "${columnName}" of relation "${relation.name}" ${what}`);
  if (column.nullable) throw refuse('must be declared NOT NULL before identity can be added');
  if (column.identity !== undefined) throw refuse('is already an identity column');
  if (column.defaultSql !== undefined) throw refuse('already has a default value');
  const spec = sequenceSpec(constraint.options as Node[] | undefined, context, undefined, identityType(column, relation.name));
  const draft = draftOf(context);
  const created = addOwnedSequence(draft, context, relation, { name: columnName, index }, spec.def, spec.sequenceName);
  const kind = constraint.generated_when === 'a' ? 'always' : 'by default';
  draft.putRelation({ ...relation, columns: relation.columns.map((candidate, position) => (position === index ? { ...candidate, identity: { kind, sequenceId: created.id } } : candidate)) });
  return { catalog: draft.finish(), commandTag: 'ALTER TABLE', notices: [], droppedTableIds: [] };
}

/** An identity column checked: an integer type, no DEFAULT beside it. */
export function identityType(column: ColumnDef, table: string): IntegerType {
  const name = column.type.name;
  if (name !== 'int2' && name !== 'int4' && name !== 'int8') throw invalid('identity column type must be smallint, integer, or bigint');
  if (column.defaultSql !== undefined) throw new SqlError(SqlState.syntaxError, `both default and identity specified for column "${column.name}" of table "${table}"`);
  return name;
}
