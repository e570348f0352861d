// Functions that read the catalog or the session: the ones psql, drivers and tools call
// (pg_table_is_visible, format_type, pg_get_userbyid, pg_get_viewdef, pg_get_indexdef, pg_get_functiondef,
// pg_get_constraintdef, pg_get_expr, obj_description, col_description, current_schema(s),
// current_database, current_user, version, pg_encoding_to_char, has_*_privilege, pg_relation_size,
// current_setting/set_config...). The planner asks for them through
// PlannerContext.resolveSessionFunction before the general library; each call reads the catalog
// as it is when the statement runs.

import * as functions from '../../sql/functions.js';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Resolved, ScalarFunction } from '../../sql/functions.js';
import { type, arrayOf, sameType, vectorOf, type DataType } from '../../sql/types.js';
import type { SqlArray, Value } from '../../sql/value.js';
import { formatTypeName, formatTypeOid } from '../catalog/type-names.js';
import { objectOid } from '../../planner/binder/context.js';
import { parse } from '../../sql/parser/index.js';
import { type SessionSequences, sequenceRelation } from '../catalog/session-sequences.js';
import { aggregateSignatures, procTypeName, sessionProcByOid } from './pg-proc-signatures.js';
import { hasSchemaPrivilegeFunction, hasSequencePrivilege, hasTablePrivilege, pgHasRole } from './privilege-functions.js';
import { aclRoleName, requireSequencePrivilege } from '../catalog/privileges.js';
import { sslFunctions, type ConnectionSsl } from './ssl-functions.js';
import {
  constraintDefinition,
  indexDefinition,
  isVisible,
  quoteIdentifier,
  roleName,
  currentRole,
  PG_CLASS_OID,
  PG_NAMESPACE_OID,
  attributes,
  type SystemContext,
} from './system-context.js';

export interface SessionFunctionContext {
  systemContext(): SystemContext;
  readonly processId: number;
  /**
   * set_config: changes a setting (undefined: back to the session's start value, as RESET), for the
   * rest of the transaction only when `local`; returns its new SHOW value.
   */
  setSetting(name: string, value: string | undefined, local: boolean): string;
  /** Approximate bytes stored for a relation. */
  relationSizeBytes(relationId: number): number;
  /** The session's sequences (nextval, currval, lastval, setval); absent: those functions fail. */
  readonly sequences?: SessionSequences;
  /** The connection's TLS (ssl_is_used() and the other sslinfo functions); absent: plaintext. */
  readonly ssl?: ConnectionSsl;
}

export const OXBOW_VERSION = '0.1.0';
export const VERSION_TEXT = `PostgreSQL 15.0 (oxbow ${OXBOW_VERSION}) on ${process.arch}-${process.platform}, a streaming SQL database, 64-bit`;

type Impl = (args: Value[], context: SessionFunctionContext) => Value;

export interface Overload {
  readonly arguments: readonly DataType[] | 'any';
  readonly returns: DataType;
  readonly strict: boolean;
  readonly impl: Impl;
  /** Evaluated for every row, never folded or shared (nextval, setval). */
  readonly volatile?: boolean;
}

const oid = type('oid');
const text = type('text');
const name = type('name');
const bool = type('bool');
const int4 = type('int4');
const int8 = type('int8');
/** Matches any array argument (PostgreSQL's anyarray). */
const anyArray: DataType = arrayOf(type('unknown'));

const startedMicros = Date.now() * 1000;

function viewDefinition(context: SessionFunctionContext, relationId: number): Value {
  const system = context.systemContext();
  const relation = system.catalog.relationById(relationId);
  if (relation?.definition === undefined) return null;
  const definition = qualifiedDefinition(system, relation.definition.trim(), relation.dependsOn);
  return ` ${definition}${definition.endsWith(';') ? '' : ';'}`;
}

/**
 * A view's query as written, with each relation it reads qualified by its schema where the bare
 * name would not find it under the current search_path, as PostgreSQL's pg_get_viewdef does (a
 * restore of pg_dump's output runs with an empty search_path). Names are matched to the relations
 * the view depends on; a CTE's name is left alone.
 */
function qualifiedDefinition(system: SystemContext, definition: string, dependsOn: readonly number[]): string {
  let statement;
  try {
    statement = parse(definition)[0];
  } catch {
    return definition;
  }
  if (statement === undefined) return definition;
  const reads = dependsOn.map((id) => system.catalog.relationById(id)).filter((found) => found !== undefined);
  return qualifyNames(system, definition, statement.node, statement.location, reads);
}

/**
 * An expression's text (a DEFAULT, a CHECK) with each call of a CREATE FUNCTION function the
 * search_path would not find qualified by its schema, as PostgreSQL's pg_get_expr prints it.
 */
function qualifiedExpression(system: SystemContext, expression: string): string {
  if (system.catalog.functions().length === 0) return expression;
  const prefix = 'SELECT ';
  let statement;
  try {
    statement = parse(`${prefix}${expression}`)[0];
  } catch {
    return expression;
  }
  if (statement === undefined) return expression;
  return qualifyNames(system, `${prefix}${expression}`, statement.node, statement.location, []).slice(prefix.length);
}

/** A CHECK (...) constraint definition with its expression's functions qualified (qualifiedExpression). */
function qualifiedConstraint(system: SystemContext, definition: string | undefined): string | null {
  if (definition === undefined) return null;
  return definition.startsWith('CHECK ') ? `CHECK ${qualifiedExpression(system, definition.slice('CHECK '.length))}` : definition;
}

/**
 * `text` with a schema inserted before each relation of `reads` and each CREATE FUNCTION function
 * it names bare that the current search_path would not find; a CTE's name is left alone.
 */
function qualifyNames(system: SystemContext, text: string, root: unknown, offset: number, reads: readonly RelationDef[]): string {
  const cteNames = new Set<string>();
  const rangeVars: { relname: string; location: number }[] = [];
  const calls: { name: string; location: number }[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'CommonTableExpr' && typeof (value as { ctename?: unknown }).ctename === 'string') cteNames.add((value as { ctename: string }).ctename);
      if (key === 'RangeVar') {
        const rangeVar = value as { relname?: string; schemaname?: string; location?: number };
        if (rangeVar.schemaname === undefined && rangeVar.relname !== undefined && rangeVar.location !== undefined) {
          rangeVars.push({ relname: rangeVar.relname, location: rangeVar.location });
        }
      }
      if (key === 'FuncCall') {
        const call = value as { funcname?: { String?: { sval?: string } }[]; location?: number };
        const parts = call.funcname ?? [];
        if (parts.length === 1 && parts[0]!.String?.sval !== undefined && call.location !== undefined) calls.push({ name: parts[0]!.String.sval, location: call.location });
      }
      visit(value);
    }
  };
  visit(root);
  const edits: { at: number; schema: string }[] = [];
  const startsWithName = (at: number, name: string) => {
    const written = text.slice(at);
    return written.startsWith(name) || written.startsWith(quoteIdentifier(name)) || written.toLowerCase().startsWith(name);
  };
  for (const { relname, location } of rangeVars) {
    if (cteNames.has(relname)) continue;
    const target = reads.find((read) => read.name === relname);
    if (target === undefined || system.catalog.resolveRelation(undefined, relname, system.searchPath)?.id === target.id) continue;
    const at = offset + location;
    if (startsWithName(at, relname)) edits.push({ at, schema: target.schema });
  }
  const functions = system.catalog.functions();
  for (const { name, location } of calls) {
    const candidates = functions.filter((fn) => fn.name === name);
    if (candidates.length === 0 || candidates.some((fn) => system.searchPath.includes(fn.schema))) continue;
    const at = offset + location;
    if (startsWithName(at, name)) edits.push({ at, schema: candidates[0]!.schema });
  }
  let qualified = text;
  for (const edit of edits.sort((a, b) => b.at - a.at)) qualified = `${qualified.slice(0, edit.at)}${quoteIdentifier(edit.schema)}.${qualified.slice(edit.at)}`;
  return qualified;
}

function typeOidOrNull(name: string, context: SessionFunctionContext): number | null {
  try {
    const system = context.systemContext();
    return objectOid(name, 'regtype', system.catalog as never, system.searchPath);
  } catch {
    return null;
  }
}

function viewByName(context: SessionFunctionContext, relationName: string): number {
  const system = context.systemContext();
  const parts = relationName.split('.');
  const found = system.catalog.resolveRelation(parts.length > 1 ? parts[0] : undefined, parts[parts.length - 1]!, system.searchPath);
  return found?.id ?? 0;
}

function description(context: SessionFunctionContext, objectId: number, catalogName: string | undefined, subId: number): Value {
  const catalog = context.systemContext().catalog;
  if (catalogName === undefined || catalogName === 'pg_class') {
    const relation = catalog.relationById(objectId);
    if (relation !== undefined) {
      if (subId === 0) return relation.comment ?? null;
      return attributes(relation).find((attribute) => attribute.attnum === subId)?.column.comment ?? null;
    }
  }
  if (catalogName === undefined || catalogName === 'pg_namespace') {
    const schema = catalog.schemaById(objectId);
    if (schema !== undefined && subId === 0) return schema.comment ?? null;
  }
  return null;
}

function databaseSize(context: SessionFunctionContext): number {
  let bytes = 0;
  for (const relation of context.systemContext().catalog.relations()) bytes += context.relationSizeBytes(relation.id);
  return bytes;
}

function sizePretty(bytes: bigint): string {
  const units = ['bytes', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let value = bytes < 0n ? -bytes : bytes;
  let unit = 0;
  // PostgreSQL switches unit once the value reaches 10240 of the current one, rounding half up.
  while (value >= 10240n && unit < units.length - 1) {
    value = (value + 512n) / 1024n;
    unit++;
  }
  return `${bytes < 0n ? '-' : ''}${value} ${units[unit]}`;
}

const always = (result: Value): Impl => () => result;

// Sequence functions (executor/catalog/session-sequences.ts): the sequence by OID in the statement's catalog.
const regclass = type('regclass');
function sequences(context: SessionFunctionContext): SessionSequences {
  if (context.sequences === undefined) throw new SqlError(SqlState.featureNotSupported, 'sequence functions are not available here');
  return context.sequences;
}
function sequenceOf(context: SessionFunctionContext, oid: Value, use: 'nextval' | 'currval' | 'setval'): ReturnType<typeof sequenceRelation> {
  const system = context.systemContext();
  const sequence = sequenceRelation(system.catalog.relationById(oid as number), oid as number);
  requireSequencePrivilege(system.catalog, currentRole(system), sequence, use);
  return sequence;
}

/**
 * pg_get_serial_sequence(table, column): the sequence a serial or identity column owns, as
 * `schema.name` (quoted as needed); NULL for a column without one. PostgreSQL's errors for an
 * unknown table (42P01) or column (42703).
 */
function serialSequence(context: SessionFunctionContext, tableName: string, columnName: string): Value {
  const system = context.systemContext();
  const parts = tableName.split('.').map((part) => (part.startsWith('"') && part.endsWith('"') ? part.slice(1, -1).replace(/""/g, '"') : part.toLowerCase()));
  const table = system.catalog.resolveRelation(parts.length > 1 ? parts[0] : undefined, parts[parts.length - 1]!, system.searchPath);
  if (table === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${tableName}" does not exist`);
  const column = table.columns.findIndex((candidate) => candidate.name === columnName && !candidate.hidden);
  if (column < 0) throw new SqlError(SqlState.undefinedColumn, `column "${columnName}" of relation "${table.name}" does not exist`);
  const sequence = system.catalog.relations().find((relation) => relation.kind === 'sequence' && relation.sequence?.ownedBy?.relationId === table.id && relation.sequence.ownedBy.column === column);
  return sequence === undefined ? null : `${quoteIdentifier(sequence.schema)}.${quoteIdentifier(sequence.name)}`;
}

let functionsByOid: Map<number, ScalarFunction> | undefined;

function libraryFunction(id: number): ScalarFunction | undefined {
  if (functionsByOid === undefined) {
    functionsByOid = new Map();
    const all = typeof functions.allFunctions === 'function' ? functions.allFunctions() : [];
    for (const fn of all) if (!functionsByOid.has(fn.oid)) functionsByOid.set(fn.oid, fn);
  }
  return functionsByOid.get(id);
}

/**
 * pg_function_is_visible: built-in functions always; a SQL function when its schema is on the search
 * path and no schema before it has a function of the same name and argument types (PostgreSQL's rule).
 */
function functionIsVisible(id: number, context: SessionFunctionContext): boolean {
  const system = context.systemContext();
  const fn = system.catalog.functionById(id);
  if (fn === undefined) return true;
  const first = system.catalog
    .resolveFunctions(undefined, fn.name, system.searchPath)
    .find((candidate) => candidate.argumentTypes.length === fn.argumentTypes.length && candidate.argumentTypes.every((type, index) => sameType(type, fn.argumentTypes[index]!)));
  return first?.id === fn.id;
}

function functionResult(id: number, context: SessionFunctionContext): Value {
  const sqlFunction = context.systemContext().catalog.functionById(id);
  if (sqlFunction !== undefined) return formatTypeName(sqlFunction.returnType);
  const fn = libraryFunction(id);
  if (fn === undefined) {
    const session = sessionProcByOid(id);
    if (session !== undefined) return procTypeName(session.returns);
    const aggregate = aggregateSignatures().find((signature) => signature.oid === id);
    return aggregate === undefined ? null : procTypeName(aggregate.returns);
  }
  return formatTypeName(fn.returnType);
}

function functionArguments(id: number, context: SessionFunctionContext, withNames: boolean): Value {
  const sqlFunction = context.systemContext().catalog.functionById(id);
  if (sqlFunction !== undefined) {
    return sqlFunction.argumentTypes.map((type, index) => (withNames && sqlFunction.argumentNames[index] ? `${quoteIdentifier(sqlFunction.argumentNames[index]!)} ` : '') + formatTypeName(type)).join(', ');
  }
  const fn = libraryFunction(id);
  if (fn === undefined) {
    const session = sessionProcByOid(id);
    const signature = session ?? aggregateSignatures().find((candidate) => candidate.oid === id);
    // format_type quotes the pseudo-type "any" (a reserved word).
    return signature === undefined ? null : signature.args.map((arg) => (procTypeName(arg) === 'any' ? '"any"' : procTypeName(arg))).join(', ');
  }
  const parts = fn.argumentTypes.map(formatTypeName);
  if (fn.variadic !== undefined) parts.push(`VARIADIC ${formatTypeName(arrayOf(fn.variadic))}`);
  return parts.join(', ');
}

/**
 * pg_get_functiondef: a SQL function as PostgreSQL 15's ruleutils.c prints it (what psql's `\sf`
 * shows): `CREATE OR REPLACE FUNCTION schema.name(args)`, RETURNS, LANGUAGE, the volatility and
 * STRICT on one line, then the body: `AS $function$...$function$` (the dollar tag grows an `x`
 * while the body contains it), or for the SQL-standard form `RETURN` and the expression as written
 * (PostgreSQL prints its deparsed tree: `RETURN (x + 1)` for `RETURN x + 1`). An aggregate is
 * 42809, as in PostgreSQL; a built-in function 0A000 (its C source is not oxbow's); an unknown
 * OID NULL.
 */
function functionDefinition(id: number, context: SessionFunctionContext): Value {
  const fn = context.systemContext().catalog.functionById(id);
  if (fn === undefined) {
    const aggregate = aggregateSignatures().find((signature) => signature.oid === id);
    if (aggregate !== undefined) throw new SqlError(SqlState.wrongObjectType, `"${aggregate.name}" is an aggregate function`);
    const builtIn = libraryFunction(id)?.name ?? sessionProcByOid(id)?.name;
    if (builtIn !== undefined) {
      throw new SqlError(SqlState.featureNotSupported, `pg_get_functiondef of built-in function "${builtIn}" is not supported`, { hint: 'oxbow prints the functions created with CREATE FUNCTION ... LANGUAGE SQL.' });
    }
    return null;
  }
  const argumentsText = fn.argumentTypes.map((argumentType, index) => (fn.argumentNames[index] ? `${quoteIdentifier(fn.argumentNames[index]!)} ` : '') + formatTypeName(argumentType)).join(', ');
  let text = `CREATE OR REPLACE FUNCTION ${quoteIdentifier(fn.schema)}.${quoteIdentifier(fn.name)}(${argumentsText})\n RETURNS ${formatTypeName(fn.returnType)}\n LANGUAGE sql\n`;
  const options = `${fn.volatility === 'volatile' ? '' : ` ${fn.volatility.toUpperCase()}`}${fn.strict ? ' STRICT' : ''}`;
  if (options !== '') text += `${options}\n`;
  if (fn.source === '' && fn.body.startsWith('SELECT ')) return `${text}RETURN ${fn.body.slice('SELECT '.length)}\n`;
  let tag = '$function';
  while (fn.source.includes(tag)) tag += 'x';
  return `${text}AS ${tag}$${fn.source}${tag}$\n`;
}

/** pg_get_function_sqlbody: a SQL-standard `RETURN expr` body as PostgreSQL prints it (pg_dump), NULL for an `AS` string. */
function functionSqlBody(id: number, context: SessionFunctionContext): Value {
  const fn = context.systemContext().catalog.functionById(id);
  if (fn === undefined || fn.source !== '' || !fn.body.startsWith('SELECT ')) return null;
  return `RETURN ${fn.body.slice('SELECT '.length)}`;
}

function arrayBound(values: SqlArray, dimension: number, which: 'upper' | 'lower'): Value {
  const lengths = values.dims ?? [values.elements.length];
  const length = lengths[dimension - 1];
  if (length === undefined || length === 0) return null;
  return which === 'upper' ? length : 1;
}

function joinArray(values: SqlArray, separator: string, nullText: string | undefined): string {
  const parts: string[] = [];
  for (const element of values.elements) {
    if (element === null) {
      if (nullText !== undefined) parts.push(nullText);
    } else parts.push(String(element));
  }
  return parts.join(separator);
}

const table: Readonly<Record<string, readonly Overload[]>> = {
  pg_table_is_visible: [
    {
      arguments: [oid],
      returns: bool,
      strict: true,
      impl: ([id], context) => {
        const system = context.systemContext();
        const relation = system.catalog.relationById(id as number);
        return relation === undefined ? null : isVisible(system, relation);
      },
    },
  ],
  pg_type_is_visible: [{ arguments: [oid], returns: bool, strict: true, impl: always(true) }],
  pg_function_is_visible: [{ arguments: [oid], returns: bool, strict: true, impl: ([id], context) => functionIsVisible(id as number, context) }],
  pg_conversion_is_visible: [{ arguments: [oid], returns: bool, strict: true, impl: always(true) }],
  pg_collation_is_visible: [{ arguments: [oid], returns: bool, strict: true, impl: always(true) }],
  pg_operator_is_visible: [{ arguments: [oid], returns: bool, strict: true, impl: always(true) }],
  format_type: [
    {
      arguments: [oid, int4],
      returns: text,
      strict: false,
      impl: ([typeId, typmod]) => (typeId === null ? null : formatTypeOid(typeId as number, typmod === null ? null : (typmod as number))),
    },
  ],
  // The argument types of a proargtypes oidvector, formatted (psql's \\do and \\dC read it).
  oidvectortypes: [
    {
      arguments: [vectorOf('oidvector')],
      returns: text,
      strict: true,
      impl: ([types]) => (types as SqlArray).elements.map((element) => formatTypeOid(element as number, null)).join(', '),
    },
  ],
  pg_get_userbyid: [{ arguments: [oid], returns: name, strict: true, impl: ([id], context) => roleName(context.systemContext(), id as number) }],
  pg_get_viewdef: [
    { arguments: [oid], returns: text, strict: true, impl: ([id], context) => viewDefinition(context, id as number) },
    { arguments: [oid, bool], returns: text, strict: true, impl: ([id], context) => viewDefinition(context, id as number) },
    { arguments: [text], returns: text, strict: true, impl: ([view], context) => viewDefinition(context, viewByName(context, view as string)) },
    { arguments: [text, bool], returns: text, strict: true, impl: ([view], context) => viewDefinition(context, viewByName(context, view as string)) },
  ],
  pg_get_indexdef: [
    {
      arguments: [oid],
      returns: text,
      strict: true,
      impl: ([id], context) => {
        const system = context.systemContext();
        const index = system.catalog.relationById(id as number);
        return index === undefined ? null : indexDefinition(system, index, false) ?? null;
      },
    },
    {
      arguments: [oid, int4, bool],
      returns: text,
      strict: true,
      impl: ([id, column, pretty], context) => {
        const system = context.systemContext();
        const index = system.catalog.relationById(id as number);
        return index === undefined ? null : indexDefinition(system, index, pretty as boolean, column as number) ?? null;
      },
    },
  ],
  pg_get_constraintdef: [
    { arguments: [oid], returns: text, strict: true, impl: ([id], context) => qualifiedConstraint(context.systemContext(), constraintDefinition(context.systemContext(), id as number)) },
    { arguments: [oid, bool], returns: text, strict: true, impl: ([id], context) => qualifiedConstraint(context.systemContext(), constraintDefinition(context.systemContext(), id as number)) },
  ],
  // oxbow stores expression text (not node trees) in pg_attrdef.adbin and friends: shown as is,
  // with the CREATE FUNCTION functions the search_path would not find qualified.
  pg_get_expr: [
    { arguments: [text, oid], returns: text, strict: true, impl: ([expression], context) => qualifiedExpression(context.systemContext(), expression as string) },
    { arguments: [text, oid, bool], returns: text, strict: true, impl: ([expression], context) => qualifiedExpression(context.systemContext(), expression as string) },
  ],
  current_schema: [
    {
      arguments: [],
      returns: name,
      strict: false,
      impl: (_args, context) => {
        const system = context.systemContext();
        return system.searchPath.find((schema) => schema !== 'pg_catalog' && system.catalog.schema(schema) !== undefined) ?? null;
      },
    },
  ],
  current_schemas: [
    {
      arguments: [bool],
      returns: arrayOf(name),
      strict: true,
      impl: ([implicit], context) => {
        const system = context.systemContext();
        const schemas = (implicit === true ? system.catalog.effectiveSearchPath(system.searchPath) : system.searchPath.filter((schema) => system.catalog.schema(schema) !== undefined));
        return { kind: 'array', elements: schemas } satisfies SqlArray;
      },
    },
  ],
  current_database: [{ arguments: [], returns: name, strict: false, impl: (_args, context) => context.systemContext().database }],
  current_catalog: [{ arguments: [], returns: name, strict: false, impl: (_args, context) => context.systemContext().database }],
  current_user: [{ arguments: [], returns: name, strict: false, impl: (_args, context) => currentUserName(context) }],
  current_role: [{ arguments: [], returns: name, strict: false, impl: (_args, context) => currentUserName(context) }],
  session_user: [{ arguments: [], returns: name, strict: false, impl: (_args, context) => sessionUserName(context) }],
  user: [{ arguments: [], returns: name, strict: false, impl: (_args, context) => currentUserName(context) }],
  version: [{ arguments: [], returns: text, strict: false, impl: always(VERSION_TEXT) }],
  obj_description: [
    { arguments: [oid], returns: text, strict: true, impl: ([id], context) => description(context, id as number, undefined, 0) },
    { arguments: [oid, name], returns: text, strict: true, impl: ([id, catalog], context) => description(context, id as number, catalog as string, 0) },
  ],
  col_description: [
    { arguments: [oid, int4], returns: text, strict: true, impl: ([id, column], context) => description(context, id as number, 'pg_class', column as number) },
  ],
  shobj_description: [{ arguments: [oid, name], returns: text, strict: true, impl: always(null) }],
  pg_encoding_to_char: [{ arguments: [int4], returns: name, strict: true, impl: ([encoding]) => (encoding === 6 ? 'UTF8' : encoding === 0 ? 'SQL_ASCII' : '') }],
  pg_char_to_encoding: [{ arguments: [name], returns: int4, strict: true, impl: ([encoding]) => (String(encoding).toUpperCase() === 'UTF8' ? 6 : -1) }],
  pg_relation_size: [
    { arguments: [oid], returns: int8, strict: true, impl: ([id], context) => BigInt(context.relationSizeBytes(id as number)) },
    { arguments: [oid, text], returns: int8, strict: true, impl: ([id, fork], context) => (fork === 'main' ? BigInt(context.relationSizeBytes(id as number)) : 0n) },
  ],
  pg_total_relation_size: [{ arguments: [oid], returns: int8, strict: true, impl: ([id], context) => BigInt(context.relationSizeBytes(id as number)) }],
  pg_table_size: [{ arguments: [oid], returns: int8, strict: true, impl: ([id], context) => BigInt(context.relationSizeBytes(id as number)) }],
  pg_database_size: [
    { arguments: [name], returns: int8, strict: true, impl: (_args, context) => BigInt(databaseSize(context)) },
    { arguments: [oid], returns: int8, strict: true, impl: (_args, context) => BigInt(databaseSize(context)) },
  ],
  pg_indexes_size: [{ arguments: [oid], returns: int8, strict: true, impl: always(0n) }],
  pg_size_pretty: [{ arguments: [int8], returns: text, strict: true, impl: ([bytes]) => sizePretty(bytes as bigint) }],
  pg_relation_is_publishable: [{ arguments: [oid], returns: bool, strict: true, impl: always(false) }],
  pg_get_statisticsobjdef_columns: [{ arguments: [oid], returns: text, strict: true, impl: always(null) }],
  pg_get_partkeydef: [{ arguments: [oid], returns: text, strict: true, impl: always(null) }],
  pg_get_function_result: [{ arguments: [oid], returns: text, strict: true, impl: ([id], context) => functionResult(id as number, context) }],
  pg_get_functiondef: [{ arguments: [oid], returns: text, strict: true, impl: ([id], context) => functionDefinition(id as number, context) }],
  pg_get_function_arguments: [{ arguments: [oid], returns: text, strict: true, impl: ([id], context) => functionArguments(id as number, context, true) }],
  pg_get_function_identity_arguments: [{ arguments: [oid], returns: text, strict: true, impl: ([id], context) => functionArguments(id as number, context, true) }],
  pg_get_serial_sequence: [{ arguments: [text, text], returns: text, strict: true, impl: ([table, column], context) => serialSequence(context, table as string, column as string) }],
  nextval: [{ arguments: [regclass], returns: int8, strict: true, volatile: true, impl: ([oid], context) => sequences(context).nextval(sequenceOf(context, oid, 'nextval')) }],
  currval: [{ arguments: [regclass], returns: int8, strict: true, volatile: true, impl: ([oid], context) => sequences(context).currval(sequenceOf(context, oid, 'currval')) }],
  lastval: [{ arguments: [], returns: int8, strict: false, volatile: true, impl: (_args, context) => sequences(context).lastval((id) => context.systemContext().catalog.relationById(id) !== undefined) }],
  setval: [
    { arguments: [regclass, int8], returns: int8, strict: true, volatile: true, impl: ([oid, value], context) => sequences(context).setval(sequenceOf(context, oid, 'setval'), value as bigint, true) },
    { arguments: [regclass, int8, bool], returns: int8, strict: true, volatile: true, impl: ([oid, value, called], context) => sequences(context).setval(sequenceOf(context, oid, 'setval'), value as bigint, called as boolean) },
  ],
  pg_tablespace_location: [{ arguments: [oid], returns: text, strict: true, impl: always('') }],
  pg_backend_pid: [{ arguments: [], returns: int4, strict: false, impl: (_args, context) => context.processId }],
  // True on a cluster's standby (its sessions have in_hot_standby on: engine/read-only.ts), as on a hot standby.
  pg_is_in_recovery: [{ arguments: [], returns: bool, strict: false, impl: (_, context) => context.systemContext().settings.show('in_hot_standby').value === 'on' }],
  pg_my_temp_schema: [{ arguments: [], returns: oid, strict: false, impl: always(0) }],
  pg_is_other_temp_schema: [{ arguments: [oid], returns: bool, strict: true, impl: always(false) }],
  pg_postmaster_start_time: [{ arguments: [], returns: type('timestamptz'), strict: false, impl: always(startedMicros) }],
  to_regclass: [{ arguments: [text], returns: type('regclass'), strict: true, impl: ([relation], context) => viewByName(context, relation as string) || null }],
  // Client drivers (psycopg's TypeInfo.fetch): the OID of a type name, NULL for an unknown one.
  to_regtype: [{ arguments: [text], returns: type('regtype'), strict: true, impl: ([name], context) => typeOidOrNull(name as string, context) }],
  current_setting: [
    { arguments: [text], returns: text, strict: true, impl: ([setting], context) => context.systemContext().settings.show(setting as string).value },
    {
      arguments: [text, bool],
      returns: text,
      strict: true,
      impl: ([setting, missingOk], context) => {
        try {
          return context.systemContext().settings.show(setting as string).value;
        } catch (error) {
          if (missingOk === true) return null;
          throw error;
        }
      },
    },
  ],
  set_config: [
    {
      arguments: [text, text, bool],
      returns: text,
      strict: false,
      // As PostgreSQL: no name is 22004; a NULL value resets to the session's start value; is_local
      // (NULL counts as false) lasts until the end of the transaction (outside a block: the statement).
      impl: ([setting, value, isLocal], context) => {
        if (setting === null) throw new SqlError(SqlState.nullValueNotAllowed, 'SET requires parameter name');
        return context.setSetting(setting as string, value === null ? undefined : (value as string), isLocal === true);
      },
    },
  ],
  // psql's \l calls array_to_string on text arrays (datacl); the general library may lack it.
  array_to_string: [
    { arguments: [arrayOf(text), text], returns: text, strict: true, impl: ([values, separator]) => joinArray(values as SqlArray, separator as string, undefined) },
    {
      arguments: [arrayOf(text), text, text],
      returns: text,
      strict: false,
      impl: ([values, separator, nullText]) => (values === null || separator === null ? null : joinArray(values as SqlArray, separator as string, nullText === null ? undefined : (nullText as string))),
    },
  ],
  // Array bounds psql's \d queries use (pg_publication_rel.prattrs); one-dimensional arrays only.
  array_upper: [{ arguments: [anyArray, int4], returns: int4, strict: true, impl: ([values, dimension]) => arrayBound(values as SqlArray, dimension as number, 'upper') }],
  array_lower: [{ arguments: [anyArray, int4], returns: int4, strict: true, impl: ([values, dimension]) => arrayBound(values as SqlArray, dimension as number, 'lower') }],
  has_table_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: (args, context) => hasTablePrivilege(context.systemContext(), args) }],
  has_schema_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: (args, context) => hasSchemaPrivilegeFunction(context.systemContext(), args) }],
  has_database_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: always(true) }],
  has_column_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: always(true) }],
  has_any_column_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: always(true) }],
  has_function_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: always(true) }],
  has_sequence_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: (args, context) => hasSequencePrivilege(context.systemContext(), args) }],
  has_tablespace_privilege: [{ arguments: 'any', returns: bool, strict: true, impl: always(true) }],
  pg_has_role: [{ arguments: 'any', returns: bool, strict: true, impl: (args, context) => pgHasRole(context.systemContext(), args) }],
  // pg_dump's catalog queries.
  acldefault: [{ arguments: [type('char'), oid], returns: arrayOf(text), strict: true, impl: ([kind, owner], context) => defaultAcl(String(kind), roleName(context.systemContext(), owner as number)) }],
  // pg_dump --jobs shares its snapshot with its workers; oxbow cannot hand a snapshot to another session.
  pg_export_snapshot: [{ arguments: [], returns: text, strict: false, impl: () => {
    throw new SqlError(SqlState.featureNotSupported, 'pg_export_snapshot is not supported', { hint: 'Run pg_dump without --jobs (-j).' });
  } }],
  pg_get_function_sqlbody: [{ arguments: [oid], returns: text, strict: true, impl: ([id], context) => functionSqlBody(id as number, context) }],
  pg_get_triggerdef: [
    { arguments: [oid], returns: text, strict: true, impl: always(null) },
    { arguments: [oid, bool], returns: text, strict: true, impl: always(null) },
  ],
  ...sslFunctions,
};

function currentUserName(context: SessionFunctionContext): string {
  const system = context.systemContext();
  return roleName(system, currentRole(system));
}

function sessionUserName(context: SessionFunctionContext): string {
  const system = context.systemContext();
  return system.sessionRoleId === undefined ? system.user : roleName(system, system.sessionRoleId);
}

/** PostgreSQL's acldefault: the privileges an object of this kind has with no GRANT or REVOKE. */
function defaultAcl(kind: string, owner: string): SqlArray {
  const role = quoteAclRole(owner);
  const own = (privileges: string) => `${role}=${privileges}/${role}`;
  const ofPublic = (privileges: string) => `=${privileges}/${role}`;
  const items: Record<string, string[]> = {
    r: [own('arwdDxt')],
    s: [own('rwU')],
    n: [own('UC')],
    f: [ofPublic('X'), own('X')],
    l: [ofPublic('U'), own('U')],
    T: [ofPublic('U'), own('U')],
    F: [own('U')],
    S: [own('U')],
    L: [own('rw')],
    d: [ofPublic('Tc'), own('CTc')],
    t: [own('C')],
    p: [own('sA')],
  };
  return { kind: 'array', elements: items[kind] ?? [] };
}

function quoteAclRole(role: string): string {
  return aclRoleName(role);
}

/** An overload as pg_proc lists it (pg-proc-signatures.ts sessionProcSignatures). */
export interface SessionFunctionOverload {
  readonly name: string;
  /** Declared argument types; 'any' for 1 to 4 arguments of any type. */
  readonly arguments: readonly DataType[] | 'any';
  readonly returns: DataType;
  readonly strict: boolean;
}

/** Every overload of these functions, for pg_proc (an argument of anyArray is PostgreSQL's anyarray). */
export function sessionFunctionOverloads(): SessionFunctionOverload[] {
  return Object.entries(table).flatMap(([functionName, overloads]) =>
    overloads.map((overload) => ({ name: functionName, arguments: overload.arguments, returns: overload.returns, strict: overload.strict })),
  );
}

/** Stable OIDs for these functions in pg_proc's numbering space above the library's. */
const functionOids = new Map<string, number>(Object.keys(table).map((key, index) => [key, 90000 + index]));

const oidLike = new Set(['oid', 'regclass', 'regtype', 'regproc', 'regprocedure', 'regnamespace', 'int4', 'int2', 'int8', 'unknown', 'text', 'varchar', 'name']);

function matches(overload: Overload, argumentTypes: readonly DataType[]): boolean {
  if (overload.arguments === 'any') return argumentTypes.length >= 1 && argumentTypes.length <= 4;
  if (overload.arguments.length !== argumentTypes.length) return false;
  return overload.arguments.every((expected, index) => {
    const given = argumentTypes[index]!;
    if (expected.name === 'array') {
      if (given.name === 'unknown') return true;
      if (given.name !== 'array') return false;
      return expected.element?.name === 'unknown' || given.element?.name === expected.element?.name;
    }
    if (given.name === 'unknown' || given.name === expected.name) return true;
    if (expected.name === 'oid' || expected.name === 'regclass') return oidLike.has(given.name);
    if (expected.name === 'text' || expected.name === 'name') return ['text', 'varchar', 'name', 'bpchar', 'char'].includes(given.name);
    if (expected.name === 'int4') return given.name === 'int2' || given.name === 'int8';
    if (expected.name === 'int8') return given.name === 'int2' || given.name === 'int4';
    return false;
  });
}

export function resolveSessionFunction(
  functionName: string,
  argumentTypes: readonly DataType[],
  context: SessionFunctionContext,
): Resolved | undefined {
  const bare = functionName.toLowerCase().replace(/^pg_catalog\./, '');
  const overloads = table[bare];
  if (overloads === undefined) return undefined;
  const overload = overloads.find((candidate) => matches(candidate, argumentTypes));
  if (overload === undefined) return undefined;
  const declared =
    overload.arguments === 'any'
      ? argumentTypes
      : overload.arguments.map((expected, index) => (expected === anyArray ? argumentTypes[index]! : expected));
  const fn: ScalarFunction = {
    name: bare,
    argumentTypes: declared,
    returnType: overload.returns,
    strict: overload.strict,
    volatility: overload.volatile === true ? 'volatile' : 'stable',
    impl: (args) => overload.impl(args, context),
    oid: functionOids.get(bare) ?? 0,
  };
  return { fn, argumentCasts: declared };
}

export { PG_CLASS_OID, PG_NAMESPACE_OID };
