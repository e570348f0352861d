// SQL-language scalar functions (`CREATE FUNCTION ... LANGUAGE SQL`), inlined at bind time: a call
// binds the function's body, `SELECT expr`, with each parameter (by name or `$n`) standing for the
// call's argument, as PostgreSQL's inline_function does for simple SQL functions. What comes out is
// an ordinary expression, so a materialized view over a function call is incremental like any
// other, and EXPLAIN shows the body in place of the call.
//
// Bodies are limited to one expression over the arguments: no FROM, no other query clause, no
// subquery (0A000; PostgreSQL runs such bodies as queries, which oxbow does not). An argument the
// body reads more than once must not be volatile (0A000: inlining would evaluate it twice, where
// PostgreSQL evaluates it once). A function whose body reaches itself is refused (0A000).

import type { Node } from '@pgsql/types';
import type { FunctionDef } from '../../sql/catalog.js';
import { type as scalar } from '../../sql/types.js';
import type { ScalarFunction } from '../../sql/functions.js';
import { selectFunction } from '../../sql/function-resolution.js';
import { parse } from '../../sql/parser/index.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Expression } from '../expression.js';
import { isVolatile } from '../walk.js';
import type { BinderContext } from './context.js';
import { type CallCollector, ExpressionBinder } from './expression.js';
import { Scope } from './scope.js';
import { displayTypeName } from './type-name.js';

/** A body once parsed: its one select-list expression (`$n` rewritten to a column `$n`) and how often each argument is read. */
interface ParsedBody {
  readonly expression: Node;
  readonly reads: readonly number[];
}

const MAX_CACHED_BODIES = 1000;
const parsedBodies = new Map<string, ParsedBody>();
const BOOL = scalar('bool');

/** PostgreSQL's 42P13 for a body whose result does not fit the declared type. */
function returnTypeMismatch(fn: FunctionDef, detail: string): SqlError {
  return new SqlError(SqlState.invalidFunctionDefinition, `return type mismatch in function declared to return ${displayTypeName(fn.returnType)}`, {
    detail,
    context: `SQL function "${fn.name}"`,
  });
}

const INLINE_HINT = 'oxbow inlines a SQL function into the query that calls it: write the body as SELECT <expression> over the arguments.';

function unsupported(message: string, position?: number): SqlError {
  return new SqlError(SqlState.featureNotSupported, message, { hint: INLINE_HINT, ...(position === undefined ? {} : { position }) });
}

const QUERY_CLAUSES = ['fromClause', 'whereClause', 'groupClause', 'havingClause', 'windowClause', 'sortClause', 'limitCount', 'limitOffset', 'distinctClause', 'withClause', 'intoClause', 'valuesLists', 'lockingClause'];

/**
 * Parses and checks a function's body (cached by text and argument names). Positions in its errors
 * are 1-based in the body text. Throws 42601 (syntax), 0A000 (not one expression), 42P13 (not one
 * column), 42P02 (`$n` beyond the arguments).
 */
export function parseFunctionBody(fn: FunctionDef): ParsedBody {
  const key = `${fn.argumentNames.join(',')}/${fn.argumentTypes.length}\0${fn.body}`;
  const cached = parsedBodies.get(key);
  if (cached !== undefined) return cached;
  const statements = parse(fn.body);
  if (statements.length !== 1) throw unsupported('SQL function bodies of more than one statement are not supported');
  const select = (statements[0]!.node as { SelectStmt?: Record<string, unknown> }).SelectStmt;
  if (select === undefined) throw unsupported('SQL function bodies other than a SELECT are not supported');
  if (select.op !== undefined && select.op !== 'SETOP_NONE') throw unsupported('SQL function bodies with UNION, INTERSECT or EXCEPT are not supported');
  const targets = (select.targetList ?? []) as { ResTarget: { val: Node } }[];
  if (targets.length !== 1) throw returnTypeMismatch(fn, 'Final statement must return exactly one column.');
  for (const clause of QUERY_CLAUSES) {
    const value = select[clause];
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    if (clause === 'fromClause') throw unsupported('SQL function bodies that read tables are not supported');
    throw unsupported('SQL function bodies with query clauses are not supported');
  }
  const reads = fn.argumentTypes.map(() => 0);
  const expression = rewriteParameters(targets[0]!.ResTarget.val, fn, reads);
  const parsed: ParsedBody = { expression, reads };
  if (parsedBodies.size >= MAX_CACHED_BODIES) parsedBodies.clear();
  parsedBodies.set(key, parsed);
  return parsed;
}

/** A copy of `node` with `$n` as a column reference named `$n` (bound through the parameter scope), counting reads of each argument. */
function rewriteParameters(node: Node, fn: FunctionDef, reads: number[]): Node {
  const visit = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(visit);
    const record = value as Record<string, unknown>;
    const paramRef = record.ParamRef as { number: number; location?: number } | undefined;
    if (paramRef !== undefined) {
      const number = paramRef.number;
      if (number < 1 || number > fn.argumentTypes.length) {
        throw new SqlError(SqlState.undefinedParameter, `there is no parameter $${number}`, { ...(paramRef.location === undefined ? {} : { position: paramRef.location + 1 }) });
      }
      reads[number - 1]!++;
      return { ColumnRef: { fields: [{ String: { sval: `$${number}` } }], location: paramRef.location } };
    }
    const subLink = record.SubLink as { location?: number } | undefined;
    if (subLink !== undefined) throw unsupported('subqueries in SQL function bodies are not supported', subLink.location === undefined ? undefined : subLink.location + 1);
    const columnRef = record.ColumnRef as { fields: Node[] } | undefined;
    if (columnRef !== undefined && columnRef.fields.length === 1) {
      const name = (columnRef.fields[0] as { String?: { sval: string } }).String?.sval;
      const index = name === undefined ? -1 : fn.argumentNames.indexOf(name);
      if (index >= 0) reads[index]!++;
    }
    const copy: Record<string, unknown> = {};
    for (const [field, child] of Object.entries(record)) copy[field] = visit(child);
    return copy;
  };
  return visit(node) as Node;
}

/** The scope a body binds in: each argument by name and as `$n`. */
function parameterScope(fn: FunctionDef, args: readonly Expression[]): Scope {
  const scope = new Scope();
  fn.argumentTypes.forEach((type, index) => {
    const name = fn.argumentNames[index];
    if (name !== undefined && name !== '') scope.merged.push({ name, expression: args[index]!, type });
    scope.merged.push({ name: `$${index + 1}`, expression: args[index]!, type });
  });
  return scope;
}

const noSubqueries = (): never => {
  throw unsupported('subqueries in SQL function bodies are not supported');
};

/**
 * The body of `fn` bound over `args` (already of the parameter types), coerced to the return
 * type, wrapped for STRICT. Positions of errors are the body's (CREATE FUNCTION maps them into its
 * statement); `context.inlining` guards against recursion.
 */
export function bindFunctionBody(context: BinderContext, fn: FunctionDef, args: readonly Expression[]): Expression {
  if (context.inlining.includes(fn.id)) {
    throw new SqlError(SqlState.featureNotSupported, `recursive SQL function "${fn.name}" is not supported`, { context: `SQL function "${fn.name}"` });
  }
  const parsed = parseFunctionBody(fn);
  context.inlining.push(fn.id);
  let bound: Expression;
  try {
    const binder = new ExpressionBinder(context, noSubqueries);
    const collector: CallCollector = { clause: 'SQL function bodies' };
    bound = binder.bind(parsed.expression, parameterScope(fn, args), collector);
  } finally {
    context.inlining.pop();
  }
  const actual = bound.type;
  try {
    bound = context.coerce(bound, fn.returnType, 'assignment');
  } catch (error) {
    if (error instanceof SqlError && (error.code === SqlState.cannotCoerce || error.code === SqlState.datatypeMismatch)) {
      throw returnTypeMismatch(fn, `Actual return type is ${displayTypeName(actual)}.`);
    }
    throw error;
  }
  if (!fn.strict) return bound;
  const nullable = args.filter((arg) => !(arg.kind === 'Literal' && arg.value !== null));
  if (nullable.length === 0) return bound;
  const anyNull: Expression = nullable.length === 1
    ? { kind: 'IsNull', arg: nullable[0]!, negated: false, type: BOOL }
    : { kind: 'Or', args: nullable.map((arg): Expression => ({ kind: 'IsNull', arg, negated: false, type: BOOL })), type: BOOL };
  return { kind: 'Case', whens: [{ condition: anyNull, result: { kind: 'Literal', value: null, type: fn.returnType } }], otherwise: bound, type: fn.returnType };
}

/** `fn` as a candidate for sql/'s function resolution (never called: calls are inlined). */
function candidateOf(fn: FunctionDef): ScalarFunction {
  return {
    name: fn.name,
    argumentTypes: fn.argumentTypes,
    returnType: fn.returnType,
    strict: fn.strict,
    volatility: fn.volatility,
    impl: () => {
      throw new Error('oxbow internal assertion: SQL functions are inlined, never called');
    },
    oid: fn.id,
  };
}

/**
 * A call of a SQL function, inlined; undefined when no SQL function of that name fits (the caller
 * reports 42883), or when an unqualified name resolves to a built-in function (pg_catalog comes
 * first in the search path, so a built-in of the same signature wins, as in PostgreSQL).
 */
export function inlineFunctionCall(context: BinderContext, parts: readonly string[], args: readonly Expression[], position: number | undefined): Expression | undefined {
  const name = parts[parts.length - 1]!;
  const schema = parts.length > 1 ? parts[parts.length - 2] : undefined;
  if (schema === 'pg_catalog') return undefined;
  const functions = context.planner.catalog.resolveFunctions?.(schema, name, context.planner.searchPath) ?? [];
  if (functions.length === 0) return undefined;
  const types = args.map((arg) => arg.type);
  if (schema === undefined && context.resolvesBuiltin(name, types)) return undefined;
  // The nearest schema with a fitting overload wins (search path order), as PostgreSQL ranks them.
  let resolved: ReturnType<typeof selectFunction>;
  for (const inSchema of new Set(functions.map((fn) => fn.schema))) {
    resolved = selectFunction(functions.filter((fn) => fn.schema === inSchema).map(candidateOf), types);
    if (resolved !== undefined) break;
  }
  if (resolved === undefined) return undefined;
  const fn = functions.find((candidate) => candidate.id === resolved!.fn.oid)!;
  const cast = context.applyCasts(args, resolved, args.map(() => position));
  const parsed = parseFunctionBody(fn);
  parsed.reads.forEach((reads, index) => {
    if (reads > 1 && isVolatile(cast[index]!)) {
      throw new SqlError(SqlState.featureNotSupported, `a volatile argument of SQL function "${fn.name}" that its body reads more than once is not supported`, {
        position,
        hint: 'oxbow inlines the function, which would evaluate the argument more than once: compute it in a subquery or a view first.',
      });
    }
  });
  try {
    return bindFunctionBody(context, fn, cast);
  } catch (error) {
    // Positions inside the body mean nothing to the caller: point at the call.
    if (error instanceof SqlError) {
      error.position = position;
      error.context ??= `SQL function "${fn.name}"`;
    }
    throw error;
  }
}
