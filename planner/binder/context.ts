// The binder's per-statement state and PostgreSQL's coercion rules: unknown-typed literals and
// parameters take the type their context asks for, other expressions get an implicit (or
// assignment, or explicit) cast from sql/functions.ts, operators and functions are resolved by
// argument types with unknowns treated as PostgreSQL does (same type as the other operand, else
// text). Parameter types are inferred here as a side effect of coercion.

import { type DataType, TYPES, sameType, type as scalar } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type CastContext, type EvalContext, type Resolved, type ScalarFunction, DEFAULT_EVAL_CONTEXT, allFunctions, allOperators, typeIoFunctionsNamed, parseValue, resolveCast, resolveFunction, resolveOperator, commonType } from '../../sql/functions.js';
import type { Expression } from '../expression.js';
import type { Value } from '../../sql/value.js';
import type { Plan } from '../plan.js';
import type { PlannerContext } from '../context.js';
import { displayTypeName } from './type-name.js';

const UNKNOWN = scalar('unknown');
const TEXT = scalar('text');

export interface CommonTableExpression {
  readonly name: string;
  readonly plan: Plan;
}

export class BinderContext {
  readonly planner: PlannerContext;
  /** Declared or inferred parameter types; 'unknown' while not inferred. */
  readonly parameterTypes: DataType[];
  /** Visible CTEs, innermost last. */
  readonly ctes: CommonTableExpression[] = [];
  /** Views being expanded (bounded: a view cannot reach itself through others forever). */
  viewDepth = 0;
  /** Ids for WITH RECURSIVE work tables. */
  nextWorkTableId = 1;
  /** SQL functions whose bodies are being inlined, innermost last (sql-function.ts: recursion). */
  readonly inlining: number[] = [];

  /** Settings for literals converted while planning. */
  readonly evalContext: EvalContext;

  constructor(planner: PlannerContext) {
    this.planner = planner;
    this.evalContext = planner.evalContext ?? DEFAULT_EVAL_CONTEXT;
    this.parameterTypes = planner.parameterTypes.map((t) => t ?? UNKNOWN);
  }

  parameter(number: number, position: number | undefined): Expression {
    if (number < 1 || number > 65535) throw new SqlError(SqlState.undefinedParameter, `there is no parameter $${number}`, { position });
    while (this.parameterTypes.length < number) this.parameterTypes.push(UNKNOWN);
    return { kind: 'Parameter', index: number - 1, type: this.parameterTypes[number - 1]! };
  }

  /** Final parameter types: never-inferred ones become text (PostgreSQL would say 42P18 in some places). */
  finalParameterTypes(): DataType[] {
    return this.parameterTypes.map((t) => (t.name === 'unknown' ? TEXT : t));
  }

  findCte(name: string): CommonTableExpression | undefined {
    for (let i = this.ctes.length - 1; i >= 0; i--) if (this.ctes[i]!.name === name) return this.ctes[i];
    return undefined;
  }

  /** `expression` as type `target`; throws 42804/42846 when no cast is allowed in `context`. */
  coerce(expression: Expression, target: DataType, context: CastContext, position?: number, what?: string): Expression {
    if (target.name === 'unknown') return expression;
    if (expression.kind === 'Literal' && expression.type.name === 'unknown') {
      if (expression.value === null) return { kind: 'Literal', value: null, type: target };
      if (target.name === 'regclass' || target.name === 'regtype' || target.name === 'regnamespace' || target.name === 'regproc' || target.name === 'regprocedure') return this.objectReference(String(expression.value), target, position);
      try {
        const value = parseValue(String(expression.value), target, this.evalContext);
        // Explicit casts truncate to the modifier ('abcdef'::varchar(3) is 'abc'); assignments check it.
        const typmodCast = target.typmod >= 0 ? resolveCast(scalarOf(target), target, context === 'explicit' ? 'explicit' : 'assignment') : undefined;
        return { kind: 'Literal', value: typmodCast === undefined ? value : typmodCast(value, this.evalContext), type: target };
      } catch (error) {
        if (error instanceof SqlError) throw error.withPosition(position);
        throw error;
      }
    }
    if (expression.kind === 'Parameter' && expression.type.name === 'unknown') {
      this.parameterTypes[expression.index] = scalarOf(target);
      const parameter: Expression = { ...expression, type: scalarOf(target) };
      return target.typmod >= 0 ? this.coerce(parameter, target, context, position, what) : parameter;
    }
    // int2vector / oidvector to the plain array: the same values, printed as an array.
    const vector = expression.type.vector !== undefined ? expression.type : undefined;
    if (vector !== undefined && context === 'explicit' && target.name === 'array' && target.vector === undefined && target.element !== undefined && sameType(vector.element!, target.element)) {
      return { kind: 'Call', fn: retypeFunction(vector, target), args: [expression], type: target };
    }
    if (sameType(expression.type, target) && (target.typmod < 0 || target.typmod === expression.type.typmod)) {
      // A record carried as an array of its fields is no array to the user.
      if (expression.type.fields !== undefined && target.fields === undefined) {
        throw new SqlError(SqlState.cannotCoerce, `cannot cast type record to ${displayTypeName(target)}`, { position });
      }
      return expression;
    }
    if (expression.type.name === 'unknown') {
      // An unknown-typed non-literal (NULL-typed expression, untyped CASE of literals): via text.
      return this.coerce({ ...expression, type: TEXT }, target, context, position, what);
    }
    const impl = resolveCast(expression.type, target, context);
    if (impl === undefined) {
      if (context === 'explicit') {
        throw new SqlError(SqlState.cannotCoerce, `cannot cast type ${displayTypeName(expression.type)} to ${displayTypeName(target)}`, { position });
      }
      const message = what === undefined
        ? `argument of type ${displayTypeName(expression.type)} cannot be used as ${displayTypeName(target)}`
        : `${what} is of type ${displayTypeName(target)} but expression is of type ${displayTypeName(expression.type)}`;
      throw new SqlError(SqlState.datatypeMismatch, message, { position, hint: what === undefined ? undefined : 'You will need to rewrite or cast the expression.' });
    }
    if (expression.kind === 'Literal' && expression.value !== null && !sessionDependentCast(expression.type, target)) {
      try {
        return { kind: 'Literal', value: impl(expression.value, this.evalContext), type: target };
      } catch {
        // Casting fails for this value (overflow...): leave it to execution time, as PostgreSQL does for stable casts.
      }
    }
    return { kind: 'Cast', input: expression, impl, type: target };
  }

  /** 'name'::regclass / 'type'::regtype: the OID of a catalog object, looked up at bind time. */
  private objectReference(text: string, target: DataType, position: number | undefined): Expression {
    if (/^[0-9]+$/.test(text.trim())) return { kind: 'Literal', value: Number(text.trim()), type: target };
    return { kind: 'Literal', value: objectOid(text, target.name as RegType, this.planner.catalog, this.planner.searchPath, position), type: target };
  }

  /** Applies a resolution's argument casts. */
  applyCasts(args: readonly Expression[], resolved: Resolved, positions: readonly (number | undefined)[]): Expression[] {
    return args.map((arg, i) => this.coerce(arg, resolved.argumentCasts[i] ?? arg.type, 'implicit', positions[i]));
  }

  /** Binds `left op right` (left undefined for a prefix operator) to a call. */
  operator(name: string, left: Expression | undefined, right: Expression, position: number | undefined): Expression {
    let leftType = left?.type;
    let rightType = right.type;
    if (leftType !== undefined && leftType.name === 'unknown' && rightType.name !== 'unknown') leftType = rightType;
    else if (leftType !== undefined && rightType.name === 'unknown' && leftType.name !== 'unknown') rightType = leftType;
    else if (rightType.name === 'unknown') {
      rightType = TEXT;
      if (leftType !== undefined) leftType = TEXT;
    }
    let resolved = resolveOperator(name, leftType, rightType);
    if (resolved === undefined && left !== undefined && (left.type.name === 'unknown' || right.type.name === 'unknown')) {
      // The other candidate PostgreSQL would consider: the unknown side as text.
      resolved = resolveOperator(name, left.type.name === 'unknown' ? TEXT : left.type, right.type.name === 'unknown' ? TEXT : right.type);
    }
    if (resolved === undefined && left !== undefined && (left.type.name === 'unknown') !== (right.type.name === 'unknown')) {
      // PostgreSQL's rule for one side of unknown type: the operator whose other side matches the
      // known type exactly, when there is only one ('{"a":1}'::jsonb #> '{a}' takes text[]).
      const knownIsLeft = right.type.name === 'unknown';
      const known = knownIsLeft ? left.type : right.type;
      const candidates = allOperators().filter(
        (candidate) => candidate.name === name && candidate.argumentTypes.length === 2 && sameType(candidate.argumentTypes[knownIsLeft ? 0 : 1]!, known),
      );
      if (candidates.length === 1) resolved = resolveOperator(name, candidates[0]!.argumentTypes[0], candidates[0]!.argumentTypes[1]!);
    }
    if (resolved === undefined) {
      const signature = left === undefined ? `${name} ${displayTypeName(right.type)}` : `${displayTypeName(left.type)} ${name} ${displayTypeName(right.type)}`;
      throw new SqlError(SqlState.undefinedFunction, `operator does not exist: ${signature}`, {
        position,
        hint: 'No operator matches the given name and argument types. You might need to add explicit type casts.',
      });
    }
    const args = left === undefined ? [right] : [left, right];
    const cast = this.applyCasts(args, resolved, args.map(() => position));
    return { kind: 'Call', fn: resolved.fn, args: cast, type: resolved.fn.returnType, operator: name };
  }

  /** Resolves a scalar function by name and bound arguments. */
  function(name: string, args: readonly Expression[], position: number | undefined): Expression {
    const types = args.map((a) => a.type);
    let resolved = this.resolveByTypes(name, types);
    if (resolved === undefined && types.some((t) => t.name === 'unknown')) {
      resolved = this.resolveByTypes(name, types.map((t) => (t.name === 'unknown' ? TEXT : t)));
    }
    if (resolved === undefined && typeIoFunctionsNamed(name).length > 0) {
      // pg_type names them and pg_proc lists them (sql/functions/type-io.ts); values are read and
      // written by oxbow itself, not through them.
      throw new SqlError(SqlState.featureNotSupported, `calling the type input/output function ${name} is not supported`, {
        position,
        hint: 'Use a cast (::text, ::bytea ...) to convert a value.',
      });
    }
    if (resolved === undefined) {
      throw new SqlError(SqlState.undefinedFunction, `function ${name}(${types.map(displayTypeName).join(', ')}) does not exist`, {
        position,
        hint: 'No function matches the given name and argument types. You might need to add explicit type casts.',
      });
    }
    const cast = this.applyCasts(args, resolved, args.map(() => position));
    if (resolved.fn.name === 'proctime' && position !== undefined) return { kind: 'Call', fn: resolved.fn, args: cast, type: resolved.fn.returnType, position };
    return { kind: 'Call', fn: resolved.fn, args: cast, type: resolved.fn.returnType };
  }

  /** True when a built-in or session function takes these argument types (unknowns also as text). */
  resolvesBuiltin(name: string, types: readonly DataType[]): boolean {
    if (this.resolveByTypes(name, types) !== undefined) return true;
    return types.some((t) => t.name === 'unknown') && this.resolveByTypes(name, types.map((t) => (t.name === 'unknown' ? TEXT : t))) !== undefined;
  }

  private resolveByTypes(name: string, types: readonly DataType[]): Resolved | undefined {
    return this.planner.resolveSessionFunction?.(name, types) ?? resolveFunction(name, types);
  }

  /** The common type of expressions (UNION, CASE, COALESCE, VALUES); 42804 when none. */
  commonTypeOf(types: readonly DataType[], what: string, position: number | undefined): DataType {
    const known = types.filter((t) => t.name !== 'unknown');
    if (known.length === 0) return TEXT;
    if (known.every((t) => sameType(t, known[0]!))) return known.every((t) => t.typmod === known[0]!.typmod) ? known[0]! : scalarOf(known[0]!);
    const common = commonType(known);
    if (common === undefined) {
      const first = known[0]!;
      const other = known.find((t) => !sameType(t, first))!;
      throw new SqlError(SqlState.datatypeMismatch, `${what} types ${displayTypeName(first)} and ${displayTypeName(other)} cannot be matched`, { position });
    }
    return common;
  }
}



const DATETIME = new Set(['timestamptz', 'timestamp', 'date', 'time', 'interval']);
const STRING = new Set(['text', 'varchar', 'bpchar', 'name', 'char', 'unknown']);

/** A cast whose result depends on session settings (TimeZone, DateStyle): not folded at plan time. */
export function sessionDependentCast(from: DataType, to: DataType): boolean {
  if (from.name === 'timestamptz' || to.name === 'timestamptz') return true;
  // reg* to text prints a name from the session's catalog (EvalContext.objectName).
  if ((from.name === 'regclass' || from.name === 'regtype' || from.name === 'regproc' || from.name === 'regnamespace' || from.name === 'regprocedure') && STRING.has(to.name)) return true;
  return (DATETIME.has(from.name) && STRING.has(to.name)) || (STRING.has(from.name) && DATETIME.has(to.name));
}

function scalarOf(t: DataType): DataType {
  return t.typmod < 0 ? t : { ...t, typmod: -1 };
}

export type RegType = 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'regprocedure';

/**
 * The OID a reg* input names ('t'::regclass, 'integer'::regtype, 'now'::regproc,
 * 'public'::regnamespace), with PostgreSQL's errors; digits are the OID itself. Used by the binder
 * for literals and by the session for parameters (EvalContext.objectOid).
 */
export function objectOid(text: string, target: RegType, catalog: PlannerContext['catalog'], searchPath: readonly string[], position?: number): number {
  if (/^\s*[0-9]+\s*$/.test(text)) return Number(text.trim());
  if (target === 'regclass') {
    const parts = splitQualifiedName(text);
    const relation = catalog.resolveRelation(parts.length > 1 ? parts[0] : undefined, parts[parts.length - 1]!, searchPath as string[]);
    if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `relation "${text}" does not exist`, { position });
    return relation.id;
  }
  if (target === 'regnamespace') {
    const name = splitQualifiedName(text);
    const schema = name.length === 1 ? catalog.schema(name[0]!) : undefined;
    if (schema === undefined) throw new SqlError(SqlState.invalidSchemaName, `schema "${text}" does not exist`, { position });
    return schema.id;
  }
  if (target === 'regprocedure') {
    // PostgreSQL's regprocedurein: name(argument types), exactly that signature; the catalog's SQL
    // functions through the search path (or their schema), then the library's.
    const match = /^\s*([^(]+?)\s*\((.*)\)\s*$/s.exec(text);
    if (match === null) throw new SqlError(SqlState.invalidTextRepresentation, `expected a left parenthesis`, { position });
    const argumentOids = match[2]!.trim() === '' ? [] : match[2]!.split(',').map((part) => {
      const oid = typeOidByName(part.trim().toLowerCase());
      if (oid === undefined) throw new SqlError(SqlState.undefinedObject, `type "${part.trim()}" does not exist`, { position });
      return oid;
    });
    const sameArguments = (types: readonly { readonly name: string }[]) => types.length === argumentOids.length && types.every((t, i) => TYPES[t.name as keyof typeof TYPES]?.oid === argumentOids[i]);
    const parts = splitQualifiedName(match[1]!);
    const sqlFunction = catalog.resolveFunctions?.(parts.length > 1 ? parts[parts.length - 2] : undefined, parts[parts.length - 1]!, searchPath).find((f) => sameArguments(f.argumentTypes));
    if (sqlFunction !== undefined) return sqlFunction.id;
    const libraryName = parts.length === 1 || parts[0] === 'pg_catalog' ? parts[parts.length - 1]! : undefined;
    const fn = allFunctions().find((f) => f.name === libraryName && f.variadic === undefined && sameArguments(f.argumentTypes));
    if (fn === undefined) throw new SqlError(SqlState.undefinedFunction, `function "${text}" does not exist`, { position });
    return fn.oid;
  }
  if (target === 'regproc') {
    // PostgreSQL's regprocin: a function name (pg_catalog. optional) naming exactly one function,
    // the catalog's SQL functions (through the search path, or their schema) included.
    const parts = splitQualifiedName(text);
    const name = parts[parts.length - 1]!;
    const sqlOids = (catalog.resolveFunctions?.(parts.length > 1 ? parts[parts.length - 2] : undefined, name, searchPath) ?? []).map((fn) => fn.id);
    const inPgCatalog = parts.length === 1 || parts[0] === 'pg_catalog';
    const libraryOids = inPgCatalog ? [...allFunctions().filter((fn) => fn.name === name).map((fn) => fn.oid), ...typeIoFunctionsNamed(name).map((fn) => fn[0])] : [];
    const oids = [...new Set([...sqlOids, ...libraryOids])];
    if (oids.length === 0) throw new SqlError(SqlState.undefinedFunction, `function "${text}" does not exist`, { position });
    if (oids.length > 1) throw new SqlError(SqlState.ambiguousFunction, `more than one function named "${text}"`, { position });
    return oids[0]!;
  }
  const oid = typeOidByName(text.trim().toLowerCase());
  if (oid === undefined) throw new SqlError(SqlState.undefinedObject, `type "${text}" does not exist`, { position });
  return oid;
}

/** `schema.name` with PostgreSQL's identifier rules: unquoted parts fold to lower case. */
function splitQualifiedName(text: string): string[] {
  const parts: string[] = [];
  const pattern = /\s*(?:"((?:[^"]|"")*)"|([^."]+))\s*(?:\.|$)/y;
  let match: RegExpExecArray | null;
  while (pattern.lastIndex < text.length && (match = pattern.exec(text)) !== null) {
    parts.push(match[1] !== undefined ? match[1].replaceAll('""', '"') : match[2]!.trim().toLowerCase());
  }
  return parts.length === 0 ? [text] : parts;
}

const TYPE_ALIASES: Readonly<Record<string, string>> = {
  integer: 'int4', int: 'int4', smallint: 'int2', bigint: 'int8', real: 'float4', 'double precision': 'float8',
  boolean: 'bool', 'character varying': 'varchar', character: 'bpchar', decimal: 'numeric',
  'timestamp without time zone': 'timestamp', 'timestamp with time zone': 'timestamptz', 'time without time zone': 'time',
};

/** PostgreSQL's pseudo-types a regtype literal may name (pg_type lists them, executor/system/pg-proc-signatures.ts). */
const PSEUDO_TYPE_OIDS: Readonly<Record<string, number>> = {
  any: 2276, anyelement: 2283, anyarray: 2277, anynonarray: 2776, anycompatible: 5077, anycompatiblearray: 5078,
  internal: 2281, cstring: 2275, trigger: 2279, event_trigger: 3838, language_handler: 2280, fdw_handler: 3115,
};

function typeOidByName(name: string): number | undefined {
  const unqualified = name.startsWith('pg_catalog.') ? name.slice('pg_catalog.'.length) : name;
  const canonical = (TYPE_ALIASES[unqualified] ?? unqualified) as keyof typeof TYPES;
  return TYPES[canonical]?.oid ?? PSEUDO_TYPE_OIDS[unqualified];
}

export function positionOf(location: number | undefined): number | undefined {
  return location === undefined || location < 0 ? undefined : location + 1;
}

const retypeCache = new Map<string, ScalarFunction>();

/** The identity from int2vector / oidvector to its plain array type. */
function retypeFunction(from: DataType, to: DataType): ScalarFunction {
  const key = JSON.stringify([from, to]);
  let fn = retypeCache.get(key);
  if (fn === undefined) {
    fn = Object.freeze({ name: 'array_retype', argumentTypes: [from], returnType: to, strict: true, volatility: 'immutable' as const, impl: ([value]: Value[]) => value!, oid: 0 });
    retypeCache.set(key, fn);
  }
  return fn;
}
