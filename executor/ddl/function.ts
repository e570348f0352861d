// CREATE [OR REPLACE] FUNCTION ... LANGUAGE SQL and DROP FUNCTION [IF EXISTS] name[(types)]
// [CASCADE | RESTRICT], with PostgreSQL's messages. A function is a catalog entry (sql/catalog.ts
// FunctionDef) whose body the planner inlines into each call (planner/binder/sql-function.ts);
// the body is checked here as PostgreSQL's check_function_bodies does. Views and materialized views
// that call a function depend on it (their `dependsOn` holds its id), and so do a table's DEFAULT
// and CHECK expressions that call it (found in their text when the function is dropped, resolved
// with the dropping session's search path): DROP without CASCADE is 2BP01 with PostgreSQL's
// DETAIL lines; CASCADE drops the views, the defaults and the constraints. CREATE OR REPLACE of a function a materialized view reaches is refused (0A000): the
// running dataflow holds the old body inlined, and a restart would plan the new one over old state.

import type { CreateFunctionStmt, DefElem, DropStmt, FunctionParameter, Node, ObjectWithArgs, TypeName } from '@pgsql/types';
import type { ColumnDef, FunctionDef, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { sameType, type DataType } from '../../sql/types.js';
import { validateSqlFunction } from '../../planner/index.js';
import { isWord, tokenize } from '../../sql/parser/tokenizer.js';
import { parse } from '../../sql/parser/index.js';
import type { Notice } from '../catalog/results.js';
import { CatalogDraft, type CatalogSnapshot } from '../catalog/catalog.js';
import { dataTypeFromTypeName, formatTypeName } from '../catalog/type-names.js';
import { type DdlContext, type DdlOutcome, kindWord, positionOf, targetSchemaName } from './ddl-context.js';
import { stringValue } from './sql-text.js';
import { collect, describeRelation, dependencyLines, droppedStateTables, type DropPlan } from './drop.js';

const systemSchemas = new Set(['pg_catalog', 'information_schema', 'oxbow_catalog']);
const IGNORED_OPTIONS = new Set(['cost', 'rows', 'parallel', 'leakproof', 'support']);

/** `name(type,type)` as PostgreSQL prints a function in messages (format_procedure). */
export function functionSignature(fn: FunctionDef): string {
  return `${fn.name}(${fn.argumentTypes.map(formatTypeName).join(',')})`;
}

/** A function or parameter type: typmods dropped, as PostgreSQL keeps them. */
function functionType(typeName: TypeName): DataType {
  const type = dataTypeFromTypeName(typeName);
  return type.typmod === -1 ? type : { ...type, typmod: -1 };
}

function option(options: readonly Node[], name: string): DefElem | undefined {
  return options.map((node) => (node as { DefElem: DefElem }).DefElem).find((element) => element.defname === name);
}

/** The text after the `RETURN` keyword of the SQL-standard body form, as `SELECT <expression>`. */
function returnBodyText(context: DdlContext, after: number): string {
  const text = context.statementText;
  const tokens = tokenize(text);
  const index = tokens.findIndex((token) => token.start >= after && isWord(token, 'RETURN'));
  if (index < 0) throw new SqlError(SqlState.featureNotSupported, 'this form of SQL function body is not supported');
  return `SELECT ${text.slice(tokens[index]!.end).trim().replace(/;\s*$/, '')}`;
}

/** Ids of the SQL functions `node` calls by name (overloads with that many arguments), for dependencies. */
export function referencedFunctionIds(node: unknown, catalog: CatalogSnapshot, searchPath: readonly string[]): number[] {
  const ids = new Set<number>();
  if (catalog.functions().length === 0) return [];
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    const call = record.FuncCall as { funcname?: Node[]; args?: Node[] } | undefined;
    if (call?.funcname !== undefined) {
      const parts = call.funcname.map(stringValue);
      const name = parts[parts.length - 1]!;
      const schema = parts.length > 1 ? parts[parts.length - 2] : undefined;
      for (const fn of catalog.resolveFunctions(schema, name, searchPath)) if (fn.argumentTypes.length === (call.args ?? []).length) ids.add(fn.id);
    }
    for (const child of Object.values(record)) visit(child);
  };
  visit(node);
  return [...ids];
}

/** Everything that reaches `fn` through views and other functions. */
function reachingRelations(fn: FunctionDef, catalog: CatalogSnapshot): RelationDef[] {
  const found = new Map<number, RelationDef>();
  const seenFunctions = new Set<number>();
  const visitFunction = (target: FunctionDef): void => {
    if (seenFunctions.has(target.id)) return;
    seenFunctions.add(target.id);
    for (const dependent of catalog.functionDependents(target.id)) visitFunction(dependent);
    visitRelations(target.id);
  };
  const visitRelations = (id: number): void => {
    for (const dependent of catalog.dependents(id)) {
      if (found.has(dependent.id)) continue;
      found.set(dependent.id, dependent);
      visitRelations(dependent.id);
    }
  };
  visitFunction(fn);
  return [...found.values()];
}

export function createFunction(statement: CreateFunctionStmt, context: DdlContext): DdlOutcome {
  const parts = (statement.funcname ?? []).map(stringValue);
  const name = parts[parts.length - 1]!;
  const schema = targetSchemaName(context, parts.length > 1 ? parts[parts.length - 2] : undefined);
  if (schema === '') throw new SqlError(SqlState.invalidSchemaName, 'no schema has been selected to create in');
  if (context.catalog.schema(schema) === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${schema}" does not exist`);
  if (systemSchemas.has(schema)) {
    throw new SqlError(SqlState.insufficientPrivilege, `permission denied for schema ${schema}`);
  }
  if (statement.is_procedure === true) throw new SqlError(SqlState.featureNotSupported, 'CREATE PROCEDURE is not supported');
  const options = (statement.options ?? []) as Node[];
  for (const element of options.map((node) => (node as { DefElem: DefElem }).DefElem)) {
    const known = ['as', 'language', 'volatility', 'strict'].includes(element.defname ?? '') || IGNORED_OPTIONS.has(element.defname ?? '');
    if (!known) throw new SqlError(SqlState.featureNotSupported, `function option ${(element.defname ?? '').toUpperCase()} is not supported`, { position: positionOf(context, element.location) });
  }

  const argumentNames: string[] = [];
  const argumentTypes: DataType[] = [];
  for (const node of (statement.parameters ?? []) as Node[]) {
    const parameter = (node as { FunctionParameter: FunctionParameter }).FunctionParameter;
    const mode = parameter.mode ?? 'FUNC_PARAM_DEFAULT';
    if (mode !== 'FUNC_PARAM_DEFAULT' && mode !== 'FUNC_PARAM_IN') {
      throw new SqlError(SqlState.featureNotSupported, 'OUT, INOUT, VARIADIC and TABLE parameters of functions are not supported', { position: positionOf(context, parameter.argType?.location) });
    }
    if (parameter.defexpr !== undefined) throw new SqlError(SqlState.featureNotSupported, 'parameter defaults of functions are not supported', { position: positionOf(context, parameter.argType?.location) });
    const parameterName = parameter.name ?? '';
    if (parameterName !== '' && argumentNames.includes(parameterName)) {
      throw new SqlError(SqlState.invalidFunctionDefinition, `parameter name "${parameterName}" used more than once`);
    }
    argumentNames.push(parameterName);
    argumentTypes.push(functionType(parameter.argType!));
  }
  if (statement.returnType === undefined) throw new SqlError(SqlState.invalidFunctionDefinition, 'function result type must be specified');
  if (statement.returnType.setof === true) throw new SqlError(SqlState.featureNotSupported, 'set-returning SQL functions are not supported', { position: positionOf(context, statement.returnType.location) });
  const returnType = functionType(statement.returnType);
  if (returnType.name === 'void' || returnType.name === 'unknown') {
    throw new SqlError(SqlState.featureNotSupported, `SQL functions returning ${formatTypeName(returnType)} are not supported`, { position: positionOf(context, statement.returnType.location) });
  }

  const sqlBody = statement.sql_body as { ReturnStmt?: unknown; List?: unknown } | undefined;
  const asOption = option(options, 'as');
  const languageOption = option(options, 'language');
  let language = languageOption === undefined ? undefined : stringValue(languageOption.arg).toLowerCase();
  if (sqlBody !== undefined) {
    language ??= 'sql';
    if (sqlBody.ReturnStmt === undefined) throw new SqlError(SqlState.featureNotSupported, 'BEGIN ATOMIC function bodies are not supported', { hint: 'Write the body as RETURN <expression>.' });
  } else if (asOption === undefined) {
    throw new SqlError(SqlState.invalidFunctionDefinition, 'no function body specified');
  }
  if (language === undefined) throw new SqlError(SqlState.invalidFunctionDefinition, 'no language specified');
  if (language !== 'sql') {
    if (['plpgsql', 'c', 'internal'].includes(language)) {
      throw new SqlError(SqlState.featureNotSupported, `functions in language "${language}" are not supported`, { hint: 'oxbow runs LANGUAGE SQL functions.' });
    }
    throw new SqlError(SqlState.undefinedObject, `language "${language}" does not exist`);
  }
  const asItems = ((asOption?.arg as { List?: { items?: Node[] } } | undefined)?.List?.items ?? []).map(stringValue);
  const source = sqlBody !== undefined ? '' : asItems[0] ?? '';
  const body = sqlBody !== undefined ? returnBodyText(context, (statement.returnType.location ?? 0) - context.statementLocation) : source;
  const volatilityOption = option(options, 'volatility');
  const volatility = (volatilityOption === undefined ? 'volatile' : stringValue(volatilityOption.arg)) as FunctionDef['volatility'];
  const strictOption = option(options, 'strict');
  const strict = (strictOption?.arg as { Boolean?: { boolval?: boolean } } | undefined)?.Boolean?.boolval === true;

  const existing = context.catalog.resolveFunctions(schema, name, []).find((fn) => fn.argumentTypes.length === argumentTypes.length && fn.argumentTypes.every((type, index) => sameType(type, argumentTypes[index]!)));
  if (existing !== undefined) {
    const dropHint = `Use DROP FUNCTION ${functionSignature(existing)} first.`;
    if (statement.replace !== true) throw new SqlError(SqlState.duplicateFunction, `function "${name}" already exists with same argument types`);
    if (!sameType(existing.returnType, returnType)) throw new SqlError(SqlState.invalidFunctionDefinition, 'cannot change return type of existing function', { hint: dropHint });
    existing.argumentNames.forEach((old, index) => {
      if (old !== '' && old !== argumentNames[index]) throw new SqlError(SqlState.invalidFunctionDefinition, `cannot change name of input parameter "${old}"`, { hint: dropHint });
    });
    const streaming = reachingRelations(existing, context.catalog).find((relation) => relation.stream !== undefined);
    if (streaming !== undefined) {
      throw new SqlError(SqlState.featureNotSupported, `cannot replace function ${functionSignature(existing)} because ${kindWord(streaming.kind)} ${streaming.name} uses it`, {
        hint: `A materialized view keeps the body it was created with inlined: drop ${streaming.name} first, or create a function of another name.`,
      });
    }
  }

  if (existing === undefined) {
    // A materialized view is planned again from its text at restart: a new overload (or the same
    // signature earlier in the search path) could resolve its call to another function over the
    // state built with the old one.
    for (const sameName of context.catalog.functions().filter((candidate) => candidate.name === name)) {
      const streaming = reachingRelations(sameName, context.catalog).find((relation) => relation.stream !== undefined);
      if (streaming !== undefined) {
        throw new SqlError(SqlState.featureNotSupported, `cannot create another function named "${name}" while ${kindWord(streaming.kind)} ${streaming.name} calls ${functionSignature(sameName)}`, {
          hint: `A restart plans ${streaming.name} again and could resolve its call to the new function: choose another name, or drop ${streaming.name} first.`,
        });
      }
    }
  }
  const draft = new CatalogDraft(context.catalog);
  const fn: FunctionDef = {
    id: existing?.id ?? draft.allocateId(),
    schema,
    name,
    argumentNames,
    argumentTypes,
    returnType,
    volatility,
    strict,
    body,
    source,
    dependsOn: sqlBody !== undefined ? referencedFunctionIds(sqlBody, context.catalog, context.searchPath) : [],
  };
  // A new function's body is checked without it (a call of itself is 42883, as in PostgreSQL); a
  // replaced one's with it, so a body that reaches itself is refused as recursive.
  const checkCatalog = existing === undefined ? context.catalog : withFunction(context.catalog, fn);
  if (context.planner !== undefined) {
    try {
      validateSqlFunction(fn, { ...context.planner, catalog: checkCatalog, searchPath: context.searchPath });
    } catch (error) {
      throw bodyPositioned(error, context, fn, sqlBody !== undefined);
    }
  }
  draft.putFunction(fn);
  return { catalog: draft.finish(), commandTag: 'CREATE FUNCTION', notices: [], droppedTableIds: [] };
}

function withFunction(catalog: CatalogSnapshot, fn: FunctionDef): CatalogSnapshot {
  const draft = new CatalogDraft(catalog);
  draft.putFunction(fn);
  return draft.finish();
}

/** An error found in the body, its position moved from the body text into the statement. */
function bodyPositioned(error: unknown, context: DdlContext, fn: FunctionDef, returnForm: boolean): unknown {
  if (!(error instanceof SqlError)) return error;
  if (error.position === undefined) return error;
  const bodyStart = returnForm ? -1 : context.statementText.indexOf(fn.source);
  if (returnForm) {
    // The body was cut out of the statement after RETURN: `SELECT ` stands for the keyword.
    const tail = fn.body.slice('SELECT '.length);
    const start = context.statementText.lastIndexOf(tail);
    error.position = start < 0 ? undefined : context.statementLocation + start + error.position - 'SELECT '.length;
  } else {
    error.position = bodyStart < 0 ? undefined : context.statementLocation + bodyStart + error.position;
  }
  return error;
}

/** The functions one DROP FUNCTION object names: by argument types, or the only one of that name. */
function findFunction(object: ObjectWithArgs, context: DdlContext, missingOk: boolean, notices: Notice[]): FunctionDef | undefined {
  const parts = (object.objname ?? []).map(stringValue);
  const name = parts[parts.length - 1]!;
  const schema = parts.length > 1 ? parts[parts.length - 2] : undefined;
  const candidates = context.catalog.resolveFunctions(schema, name, context.searchPath);
  if (object.args_unspecified === true) {
    if (candidates.length === 1) return candidates[0];
    if (candidates.length > 1) {
      throw new SqlError(SqlState.ambiguousFunction, `function name "${name}" is not unique`, { hint: 'Specify the argument list to select the function unambiguously.' });
    }
    if (missingOk) {
      notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `function ${name}() does not exist, skipping` });
      return undefined;
    }
    throw new SqlError(SqlState.undefinedFunction, `could not find a function named "${name}"`);
  }
  const typeNames = ((object.objargs ?? []) as Node[]).map((node) => (node as { TypeName: TypeName }).TypeName);
  const types = typeNames.map(functionType);
  const found = candidates.find((fn) => fn.argumentTypes.length === types.length && fn.argumentTypes.every((type, index) => sameType(type, types[index]!)));
  if (found !== undefined) return found;
  if (missingOk) {
    // PostgreSQL's NOTICE spells the types as written (TypeNameListToString: `pg_catalog.int4`).
    const written = typeNames.map((typeName) => (typeName.names ?? []).map(stringValue).join('.')).join(',');
    notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `function ${name}(${written}) does not exist, skipping` });
    return undefined;
  }
  throw new SqlError(SqlState.undefinedFunction, `function ${name}(${types.map(formatTypeName).join(', ')}) does not exist`);
}

/** A table's DEFAULT or CHECK expression that calls a function (PostgreSQL's pg_attrdef / pg_constraint dependency). */
interface ExpressionUse {
  readonly table: RelationDef;
  readonly kind: 'default' | 'check';
  /** The column (default) or constraint (check) name. */
  readonly name: string;
}

function describeUse(use: ExpressionUse, context: DdlContext): string {
  const table = describeRelation(use.table, context);
  return use.kind === 'default' ? `default value for column ${use.name} of ${table}` : `constraint ${use.name} on ${table}`;
}

/** True when the expression text calls `fn` (by name and number of arguments, through the search path). */
function callsFunction(expression: string, fn: FunctionDef, context: DdlContext): boolean {
  if (!expression.toLowerCase().includes(fn.name.toLowerCase())) return false;
  try {
    const [statement] = parse(`SELECT ${expression}`);
    return statement !== undefined && referencedFunctionIds(statement.node, context.catalog, context.searchPath).includes(fn.id);
  } catch {
    return false;
  }
}

/** The DEFAULT and CHECK expressions of tables that call `fn`, table by table (creation order), defaults first. */
function expressionUses(fn: FunctionDef, context: DdlContext): ExpressionUse[] {
  const uses: ExpressionUse[] = [];
  const tables = context.catalog.relations().filter((relation) => relation.kind === 'table').sort((a, b) => a.id - b.id);
  for (const table of tables) {
    for (const column of table.columns) {
      if (column.defaultSql !== undefined && callsFunction(column.defaultSql, fn, context)) uses.push({ table, kind: 'default', name: column.name });
    }
    for (const check of table.checks ?? []) {
      if (callsFunction(check.sql, fn, context)) uses.push({ table, kind: 'check', name: check.name });
    }
  }
  return uses;
}

interface FunctionDropPlan extends DropPlan {
  readonly functions: Map<number, FunctionDef>;
  /** DEFAULT and CHECK expressions dropped with the functions they call (CASCADE). */
  readonly expressions: ExpressionUse[];
  /** The functions the statement names: dropping one another is no dependency problem. */
  readonly targets: Set<number>;
  /** `drop cascades to ...` objects, in the order found. */
  readonly cascaded: string[];
}

/** Adds `fn` and what depends on it (functions whose body calls it, views calling it); 2BP01 under RESTRICT. */
function collectFunction(fn: FunctionDef, cascade: boolean, context: DdlContext, plan: FunctionDropPlan): void {
  if (plan.functions.has(fn.id)) return;
  plan.functions.set(fn.id, fn);
  const functions = context.catalog.functionDependents(fn.id).filter((dependent) => !plan.functions.has(dependent.id) && !plan.targets.has(dependent.id));
  const relations = context.catalog.dependents(fn.id).filter((dependent) => !plan.relations.has(dependent.id));
  const expressions = expressionUses(fn, context).filter((use) => !plan.expressions.some((known) => known.table.id === use.table.id && known.kind === use.kind && known.name === use.name));
  if (functions.length + relations.length + expressions.length === 0) return;
  if (!cascade) {
    throw new SqlError(SqlState.dependentObjectsStillExist, `cannot drop function ${functionSignature(fn)} because other objects depend on it`, {
      detail: functionDependencyLines(fn, context).join('\n'),
      hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
    });
  }
  for (const dependent of functions) {
    if (plan.functions.has(dependent.id)) continue;
    plan.cascaded.push(`function ${functionSignature(dependent)}`);
    collectFunction(dependent, true, context, plan);
  }
  // Defaults, constraints and views in their objects' creation order, as pg_depend lists them.
  const objects: { readonly id: number; readonly drop: () => void }[] = [
    ...expressions.map((use) => ({
      id: use.table.id,
      drop: () => {
        plan.cascaded.push(describeUse(use, context));
        plan.expressions.push(use);
      },
    })),
    ...relations.map((relation) => ({
      id: relation.id,
      drop: () => {
        if (plan.relations.has(relation.id)) return;
        plan.cascaded.push(describeRelation(relation, context));
        const before = plan.reported.length;
        collect(relation, true, context, plan, `function ${functionSignature(fn)}`);
        for (const reported of plan.reported.splice(before)) plan.cascaded.push(describeRelation(reported, context));
      },
    })),
  ];
  for (const object of objects.sort((a, b) => a.id - b.id)) object.drop();
}

function functionDependencyLines(fn: FunctionDef, context: DdlContext): string[] {
  const lines: string[] = [];
  const target = `function ${functionSignature(fn)}`;
  for (const dependent of context.catalog.functionDependents(fn.id)) {
    lines.push(`function ${functionSignature(dependent)} depends on ${target}`);
    lines.push(...functionDependencyLines(dependent, context));
  }
  // Defaults, constraints and views in their objects' creation order, as pg_depend lists them.
  const objects: { readonly id: number; readonly lines: () => string[] }[] = [
    ...expressionUses(fn, context).map((use) => ({ id: use.table.id, lines: () => [`${describeUse(use, context)} depends on ${target}`] })),
    ...context.catalog.dependents(fn.id).map((relation) => ({ id: relation.id, lines: () => [`${describeRelation(relation, context)} depends on ${target}`, ...dependencyLines(relation, context)] })),
  ];
  for (const object of objects.sort((a, b) => a.id - b.id)) lines.push(...object.lines());
  return lines;
}

function withoutDefault(column: ColumnDef): ColumnDef {
  const { defaultSql: _dropped, ...rest } = column;
  return rest;
}

export function dropFunction(statement: DropStmt, context: DdlContext): DdlOutcome {
  const cascade = statement.behavior === 'DROP_CASCADE';
  const notices: Notice[] = [];
  const plan: FunctionDropPlan = { relations: new Map(), reported: [], functions: new Map(), targets: new Set(), cascaded: [], expressions: [] };
  const targets: FunctionDef[] = [];
  for (const object of (statement.objects ?? []) as Node[]) {
    const fn = findFunction((object as { ObjectWithArgs: ObjectWithArgs }).ObjectWithArgs, context, statement.missing_ok === true, notices);
    if (fn !== undefined) targets.push(fn);
  }
  for (const fn of targets) plan.targets.add(fn.id);
  for (const fn of targets) collectFunction(fn, cascade, context, plan);
  if (plan.functions.size === 0) return { catalog: undefined, commandTag: 'DROP FUNCTION', notices, droppedTableIds: [] };
  if (plan.cascaded.length === 1) notices.push({ severity: 'NOTICE', code: SqlState.successfulCompletion, message: `drop cascades to ${plan.cascaded[0]}` });
  if (plan.cascaded.length > 1) {
    notices.push({
      severity: 'NOTICE',
      code: SqlState.successfulCompletion,
      message: `drop cascades to ${plan.cascaded.length} other objects`,
      detail: plan.cascaded.map((line) => `drop cascades to ${line}`).join('\n'),
    });
  }
  const draft = new CatalogDraft(context.catalog);
  for (const id of plan.functions.keys()) draft.removeFunction(id);
  for (const relation of plan.relations.values()) draft.removeRelation(relation.id);
  // The defaults and CHECK constraints that called a dropped function go; their tables stay.
  const changed = new Map<number, RelationDef>();
  for (const use of plan.expressions) {
    const table = changed.get(use.table.id) ?? use.table;
    changed.set(
      table.id,
      use.kind === 'default'
        ? { ...table, columns: table.columns.map((column) => (column.name === use.name ? withoutDefault(column) : column)) }
        : { ...table, checks: (table.checks ?? []).filter((check) => check.name !== use.name) },
    );
  }
  for (const table of changed.values()) draft.putRelation(table);
  return { catalog: draft.finish(), commandTag: 'DROP FUNCTION', notices, droppedTableIds: droppedStateTables(plan.relations.values()) };
}
