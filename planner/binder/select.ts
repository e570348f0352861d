// SELECT, VALUES and set operations to logical plans, in PostgreSQL's clause order: WITH, FROM,
// WHERE, GROUP BY + aggregates, HAVING, window functions, select list, DISTINCT [ON], ORDER BY,
// LIMIT / OFFSET. Aggregate and window calls are collected while the select list, HAVING and
// ORDER BY are bound (as placeholder columns), then rewritten to read the Aggregate / Window
// output; a bare column that is neither grouped nor aggregated is PostgreSQL's 42803.

import type { Node, SelectStmt, FuncCall, ResTarget, SortBy } from '@pgsql/types';
import { type DataType, type as scalar } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type Expression, mapChildren, rewriteColumns } from '../expression.js';
import type { AggregateCall, AggregateName, OutputColumn, Plan, PlanOf, SetReturningName, SortKey, WindowCall } from '../plan.js';
import { type BinderContext, positionOf } from './context.js';
import { type CallCollector, ExpressionBinder, locationOf } from './expression.js';
import { FromBinder } from './from.js';
import { Scope } from './scope.js';
import { bindAggregateCall, bindWindowCall, isWindowOnly } from './aggregate.js';
import { expressionKey } from './expression-key.js';
import { nestedInputs, outerColumnsOf, remapOuterInPlan } from '../walk.js';
import type { CorrespondingClause } from '../../sql/parser/corresponding.js';

const AGGREGATE_MARK = 1_000_000;
const WINDOW_MARK = 2_000_000;
const SET_RETURNING_MARK = 3_000_000;
const GROUPING_MARK = 4_000_000;
/** PostgreSQL's limit on the sets one GROUP BY expands to. */
const MAX_GROUPING_SETS = 4096;
const TEXT = scalar('text');
const INT8 = scalar('int8');
const INT4 = scalar('int4');

interface Target {
  readonly name: string;
  readonly expression: Expression;
  readonly tableOid: number;
  readonly columnNumber: number;
  readonly position: number | undefined;
}

export class SelectBinder {
  readonly expressions: ExpressionBinder;
  readonly from: FromBinder;

  constructor(readonly context: BinderContext) {
    this.expressions = new ExpressionBinder(context, (select, outer) => this.bindQuery(select, outer));
    this.from = new FromBinder(context, this.expressions, (select, outer) => this.bindQuery(select, outer));
  }

  /** Any query node (SelectStmt) with its enclosing scope for correlated references. */
  /**
   * `keepUnknown`: leave untyped literal outputs ('x', NULL) unknown for the consumer to type
   * (set operation branches, INSERT ... SELECT), as PostgreSQL does; otherwise they become text.
   */
  bindQuery(node: Node, outer: Scope | undefined, keepUnknown = false): Plan {
    const select = (node as { SelectStmt?: SelectStmt }).SelectStmt;
    if (select === undefined) throw new SqlError(SqlState.featureNotSupported, `${Object.keys(node)[0]} is not supported as a query`);
    const cteCount = this.context.ctes.length;
    try {
      if (select.withClause !== undefined) this.bindWith(select.withClause, outer);
      return this.bindSelect(select, outer, keepUnknown);
    } finally {
      this.context.ctes.length = cteCount;
    }
  }

  private bindWith(withClause: any, outer: Scope | undefined): void {
    for (const cteNode of withClause.ctes as Node[]) {
      const cte = (cteNode as any).CommonTableExpr;
      if (!('SelectStmt' in cte.ctequery)) throw new SqlError(SqlState.featureNotSupported, 'data-modifying statements in WITH are not supported', { position: positionOf(cte.location) });
      const recursive = withClause.recursive ? this.bindRecursive(cte, outer) : undefined;
      let plan = recursive ?? this.bindQuery(cte.ctequery, outer);
      const names = ((cte.aliascolnames ?? []) as Node[]).map((n) => (n as any).String.sval as string);
      if (names.length > plan.columns.length) {
        throw new SqlError(SqlState.invalidColumnReference, `WITH query "${cte.ctename}" has ${plan.columns.length} columns available but ${names.length} columns specified`, { position: positionOf(cte.location) });
      }
      if (names.length > 0) plan = { ...plan, columns: plan.columns.map((c, i) => ({ ...c, name: names[i] ?? c.name })) } as Plan;
      this.context.ctes.push({ name: cte.ctename, plan });
    }
  }

  /**
   * `name AS (base UNION [ALL] recursive)` where the recursive term reads `name`: a RecursiveUnion
   * whose recursive side reads the previous round through a WorkTable. Undefined when the CTE is
   * not recursive after all (then it is bound as an ordinary one).
   */
  private bindRecursive(cte: any, outer: Scope | undefined): Plan | undefined {
    const query = cte.ctequery.SelectStmt as SelectStmt;
    if (query.op !== 'SETOP_UNION' || query.larg === undefined || query.rarg === undefined) return undefined;
    const position = positionOf(cte.location);
    const base = this.bindSelect(query.larg, outer);
    const names = ((cte.aliascolnames ?? []) as Node[]).map((n) => (n as any).String.sval as string);
    const columns = base.columns.map((c, i) => ({ name: names[i] ?? c.name, type: c.type.name === 'unknown' ? TEXT : c.type, tableOid: 0, columnNumber: 0 }));
    const id = this.context.nextWorkTableId++;
    this.context.ctes.push({ name: cte.ctename, plan: { kind: 'WorkTable', id, name: cte.ctename, columns } });
    let recursive: Plan;
    try {
      recursive = this.bindSelect(query.rarg, outer);
    } finally {
      this.context.ctes.pop();
    }
    if (!readsWorkTable(recursive, id)) return undefined;
    if (recursive.columns.length !== columns.length) {
      throw new SqlError(SqlState.syntaxError, 'each UNION query must have the same number of columns', { position });
    }
    const castBase: Plan = base.columns.some((c) => c.type.name === 'unknown')
      ? { kind: 'Project', input: base, expressions: base.columns.map((c, i) => this.context.coerce({ kind: 'Column', index: i, type: c.type }, columns[i]!.type, 'implicit')), columns }
      : base;
    const castRecursive: Plan = {
      kind: 'Project',
      input: recursive,
      expressions: recursive.columns.map((c, i) => {
        try {
          return this.context.coerce({ kind: 'Column', index: i, type: c.type }, columns[i]!.type, 'assignment');
        } catch {
          throw new SqlError(SqlState.datatypeMismatch, `recursive query "${cte.ctename}" column ${i + 1} has type ${c.type.name} in non-recursive term but type ${columns[i]!.type.name} overall`, { position });
        }
      }),
      columns,
    };
    return { kind: 'RecursiveUnion', id, all: query.all === true, base: castBase, recursive: castRecursive, columns };
  }

  private bindSelect(select: SelectStmt, outer: Scope | undefined, keepUnknown = false): Plan {
    if (select.op !== undefined && select.op !== 'SETOP_NONE') return this.bindSetOperation(select, outer);
    if (select.valuesLists !== undefined) return this.finishQuery(this.bindValues(select.valuesLists, outer), select, outer);
    if (select.intoClause !== undefined) throw new SqlError(SqlState.featureNotSupported, 'SELECT INTO is not supported');
    if (select.lockingClause !== undefined) throw new SqlError(SqlState.featureNotSupported, 'SELECT FOR UPDATE/SHARE is not supported');
    return this.bindSimpleSelect(select, outer, keepUnknown);
  }

  bindValues(lists: readonly Node[], outer: Scope | undefined): Plan {
    const scope = new Scope(outer);
    const rows = lists.map((l) => ((l as any).List.items as Node[]).map((item) => this.expressions.bind(item, scope, { clause: 'VALUES' })));
    const width = rows[0]!.length;
    for (const row of rows) {
      if (row.length !== width) throw new SqlError(SqlState.syntaxError, 'VALUES lists must all be the same length', { position: locationOf(lists[0]!) });
    }
    const types: DataType[] = [];
    for (let i = 0; i < width; i++) {
      const all = rows.map((r) => r[i]!.type);
      types.push(rows.length === 1 && all[0]!.name === 'unknown' ? scalar('unknown') : this.context.commonTypeOf(all, 'VALUES', undefined));
    }
    const coerced = rows.map((row) => row.map((e, i) => this.context.coerce(e, types[i]!, 'implicit')));
    const columns = types.map((type, i) => ({ name: `column${i + 1}`, type, tableOid: 0, columnNumber: 0 }));
    return { kind: 'Values', rows: coerced, columns };
  }

  private bindSetOperation(select: SelectStmt, outer: Scope | undefined): Plan {
    const operation = select.op === 'SETOP_UNION' ? 'union' : select.op === 'SETOP_INTERSECT' ? 'intersect' : 'except';
    let left = this.bindSelect(select.larg!, outer, true);
    let right = this.bindSelect(select.rarg!, outer, true);
    const corresponding = (select as { oxbowCorresponding?: CorrespondingClause }).oxbowCorresponding;
    if (corresponding !== undefined) [left, right] = correspondingSides(left, right, corresponding, operation.toUpperCase());
    if (left.columns.length !== right.columns.length) {
      throw new SqlError(SqlState.syntaxError, `each ${operation.toUpperCase()} query must have the same number of columns`);
    }
    const types = left.columns.map((c, i) => this.context.commonTypeOf([c.type, right.columns[i]!.type], operation.toUpperCase(), undefined));
    const cast = (plan: Plan): Plan => this.coerceOutputs(plan, types, 'implicit');
    const plan: Plan = {
      kind: 'SetOperation',
      operation,
      all: select.all === true,
      left: cast(left),
      right: cast(right),
      columns: left.columns.map((c, i) => ({ name: c.name, type: types[i]!, tableOid: 0, columnNumber: 0 })),
    };
    return this.finishQuery(plan, select, outer);
  }

  /** ORDER BY / LIMIT on VALUES and set operations: keys name output columns. */
  private finishQuery(input: Plan, select: SelectStmt, outer: Scope | undefined): Plan {
    let plan = input;
    const sortClause = (select.sortClause ?? []) as Node[];
    if (sortClause.length > 0) {
      const scope = new Scope(outer);
      scope.relations.push({ alias: '', columns: plan.columns.map((c, i) => ({ name: c.name, type: c.type, hidden: false, tableOid: c.tableOid, columnNumber: c.columnNumber, index: i })) });
      const keys = sortClause.map((n) => {
        const sortBy = (n as any).SortBy as SortBy;
        const ordinal = ordinalOf(sortBy.node!);
        let expression: Expression;
        if (ordinal !== undefined) {
          if (ordinal < 1 || ordinal > plan.columns.length) throw new SqlError(SqlState.invalidColumnReference, `ORDER BY position ${ordinal} is not in select list`, { position: locationOf(sortBy.node!) });
          expression = { kind: 'Column', index: ordinal - 1, type: plan.columns[ordinal - 1]!.type };
        } else {
          expression = this.expressions.bind(sortBy.node!, scope, { clause: 'ORDER BY' });
          if (expression.kind !== 'Column') throw new SqlError(SqlState.featureNotSupported, 'ORDER BY on a UNION/INTERSECT/EXCEPT result must name a result column', { position: locationOf(sortBy.node!) });
        }
        return sortKey(expression, sortBy);
      });
      plan = { kind: 'Sort', input: plan, keys, columns: plan.columns };
    }
    return this.limit(plan, select, outer);
  }

  private limit(plan: Plan, select: SelectStmt, outer: Scope | undefined): Plan {
    if (select.limitCount === undefined && select.limitOffset === undefined) return plan;
    const scope = new Scope(outer);
    const bindCount = (node: Node | undefined): Expression | undefined => {
      if (node === undefined) return undefined;
      const bound = this.expressions.bind(node, scope, { clause: 'LIMIT' });
      if (bound.kind === 'Literal' && bound.value === null) return undefined;
      return this.context.coerce(bound, INT8, 'implicit', locationOf(node));
    };
    const limit = bindCount(select.limitCount);
    const offset = bindCount(select.limitOffset);
    if (select.limitOption === 'LIMIT_OPTION_WITH_TIES') {
      // The grammar already requires ORDER BY (42601), so the input is the Sort.
      if (plan.kind !== 'Sort') throw new SqlError(SqlState.syntaxError, 'WITH TIES cannot be specified without ORDER BY clause');
      if (limit === undefined) throw new SqlError(SqlState.invalidRowCountInLimitClause, 'row count cannot be null in FETCH FIRST ... WITH TIES clause');
      return { kind: 'Limit', input: plan, limit, ...(offset ? { offset } : {}), withTies: true, columns: plan.columns };
    }
    if (limit === undefined && offset === undefined) return plan;
    return { kind: 'Limit', input: plan, ...(limit ? { limit } : {}), ...(offset ? { offset } : {}), columns: plan.columns };
  }

  /**
   * The plan with its output columns of the given types: an untyped literal output is typed where
   * it is produced (so 'x' and NULL take the consumer's type, as in PostgreSQL), other columns are
   * cast in a projection above.
   */
  coerceOutputs(plan: Plan, types: readonly DataType[], context: 'implicit' | 'assignment', what?: (i: number) => string): Plan {
    const same = (i: number) => plan.columns[i]!.type.name === types[i]!.name && plan.columns[i]!.type.typmod === types[i]!.typmod && sameTypeDeep(plan.columns[i]!.type, types[i]!);
    if (plan.columns.every((_, i) => same(i))) return plan;
    const columns = plan.columns.map((c, i) => ({ ...c, type: types[i]! }));
    const unknownAt = (i: number) => plan.columns[i]!.type.name === 'unknown';
    if (plan.kind === 'Project' && plan.columns.some((_, i) => unknownAt(i))) {
      const expressions = plan.expressions.map((e, i) => (unknownAt(i) ? this.context.coerce(e, types[i]!, context, undefined, what?.(i)) : e));
      const typed: Plan = { ...plan, expressions, columns: plan.columns.map((c, i) => (unknownAt(i) ? { ...c, type: types[i]! } : c)) };
      return this.coerceOutputs(typed, types, context, what);
    }
    if (plan.kind === 'Values' && plan.columns.some((_, i) => unknownAt(i))) {
      const rows = plan.rows.map((row) => row.map((e, i) => (unknownAt(i) ? this.context.coerce(e, types[i]!, context, undefined, what?.(i)) : e)));
      const typed: Plan = { ...plan, rows, columns: plan.columns.map((c, i) => (unknownAt(i) ? { ...c, type: types[i]! } : c)) };
      return this.coerceOutputs(typed, types, context, what);
    }
    if ((plan.kind === 'Sort' || plan.kind === 'Limit') && plan.columns.some((_, i) => unknownAt(i))) {
      // Sort keys over an unknown column stay valid: the column keeps its position.
      const input = this.coerceOutputs(plan.input, plan.columns.map((c, i) => (unknownAt(i) ? types[i]! : c.type)), context, what);
      return this.coerceOutputs({ ...plan, input, columns: input.columns } as Plan, types, context, what);
    }
    return {
      kind: 'Project',
      input: plan,
      expressions: plan.columns.map((c, i) => this.context.coerce({ kind: 'Column', index: i, type: c.type }, types[i]!, context, undefined, what?.(i))),
      columns,
    };
  }

  private bindSimpleSelect(select: SelectStmt, outer: Scope | undefined, keepUnknown = false): Plan {
    const { plan: fromPlan, scope } = this.from.bindFromList((select.fromClause ?? []) as Node[], outer);
    let plan = fromPlan;
    if (select.whereClause !== undefined) {
      const predicate = this.expressions.condition(select.whereClause, scope, { clause: 'WHERE' }, 'WHERE');
      plan = { kind: 'Filter', input: plan, predicate, columns: plan.columns };
    }

    const aggregates: AggregateCall[] = [];
    const windows: WindowCall[] = [];
    const namedWindows = new Map<string, Node>();
    for (const w of (select.windowClause ?? []) as Node[]) namedWindows.set((w as any).WindowDef.name, w);
    const sortKeysOf = (nodes: readonly Node[], inScope: Scope, collector: CallCollector): SortKey[] =>
      nodes.map((n) => {
        const sortBy = (n as any).SortBy as SortBy;
        return sortKey(this.expressions.bind(sortBy.node!, inScope, collector), sortBy);
      });
    // GROUPING(args): the arguments are matched to the group keys once these are known.
    const groupingCalls: { args: Expression[]; positions: (number | undefined)[]; position: number | undefined }[] = [];
    const collector: CallCollector = {
      clause: 'this clause',
      grouping: (args: readonly Node[], inScope: Scope, position: number | undefined): Expression => {
        const inner: CallCollector = { clause: 'arguments of GROUPING' };
        groupingCalls.push({ args: args.map((a) => this.expressions.bind(a, inScope, inner)), positions: args.map((a) => locationOf(a) ?? position), position });
        return { kind: 'Column', index: GROUPING_MARK + groupingCalls.length - 1, type: INT4 };
      },
      aggregate: (call: FuncCall, inScope: Scope, position: number | undefined): Expression => {
        const name = (call.funcname!.map((n) => (n as any).String.sval as string).pop()!) as AggregateName;
        const nested: CallCollector = {
          clause: 'aggregate function calls',
          aggregate: () => {
            throw new SqlError(SqlState.groupingError, 'aggregate function calls cannot be nested', { position });
          },
        };
        const aggregate = bindAggregateCall(
          call,
          name,
          (node) => this.expressions.bind(node, inScope, nested),
          (node) => this.expressions.condition(node, inScope, nested, 'FILTER'),
          (nodes) => sortKeysOf(nodes, inScope, nested),
          this.context,
          position,
        );
        // The same call written twice (select list and HAVING) is computed once.
        const key = aggregateKey(aggregate);
        let index = aggregates.findIndex((a) => aggregateKey(a) === key);
        if (index < 0) {
          aggregates.push(aggregate);
          index = aggregates.length - 1;
        }
        return { kind: 'Column', index: AGGREGATE_MARK + index, type: aggregate.type };
      },
      window: (call: FuncCall, inScope: Scope, position: number | undefined): Expression => {
        const inner: CallCollector = { clause: 'window function calls', aggregate: collector.aggregate! };
        const window = bindWindowCall(
          call,
          (node) => this.expressions.bind(node, inScope, inner),
          (nodes) => sortKeysOf(nodes, inScope, inner),
          this.context,
          position,
          namedWindows,
        );
        windows.push(window);
        return { kind: 'Column', index: WINDOW_MARK + windows.length - 1, type: window.type };
      },
    };
    // Set-returning functions in the select list: a LATERAL join of the FROM rows with them. Several
    // run in lockstep (PostgreSQL's zip: as many rows as the longest, the others NULL past their
    // end): rows_from below. Equal calls run once. An argument with a subquery is computed on the
    // FROM row first (a Project), then read from there.
    const fromWidth = plan.columns.length;
    const lifted: Expression[] = [];
    const setReturning: { key: string; part: PlanOf<'TableFunction'>; result: Expression }[] = [];
    collector.setReturning = (call: FuncCall, inScope: Scope, position: number | undefined): Expression => {
      const callKey = JSON.stringify(call, (key, value) => (key === 'location' ? undefined : value));
      const same = setReturning.find((entry) => entry.key === callKey);
      if (same !== undefined) return same.result;
      const name = call.funcname!.map((n) => (n as any).String.sval as string).pop()! as SetReturningName;
      const args = ((call.args ?? []) as Node[]).map((a) => {
        const bound = this.expressions.bind(a, inScope, { clause: 'arguments of set-returning functions' });
        if (!hasSubqueryExpression(bound)) return bound;
        if (inScope !== scope) throw new SqlError(SqlState.featureNotSupported, 'subqueries in arguments of a nested set-returning function are not supported', { position });
        lifted.push(bound);
        return { kind: 'Column', index: fromWidth + lifted.length - 1, type: bound.type } as Expression;
      });
      const { typed, type } = this.from.setReturningArguments(name, args, position);
      // The arguments now read the FROM row as the enclosing row of the LATERAL side.
      const lateralArgs = typed.map(toLateral);
      const result: Expression = { kind: 'Column', index: SET_RETURNING_MARK + setReturning.length, type };
      setReturning.push({ key: callKey, part: { kind: 'TableFunction', name, args: lateralArgs, withOrdinality: false, columns: [{ name, type, tableOid: 0, columnNumber: 0 }] }, result });
      return result;
    };

    let targets = this.bindTargets((select.targetList ?? []) as Node[], scope, collector);
    collector.setReturning = undefined;
    const having = select.havingClause === undefined ? undefined : this.expressions.condition(select.havingClause, scope, { ...collector, window: undefined, clause: 'HAVING' }, 'HAVING');
    if (setReturning.length > 0) {
      if (aggregates.length > 0 || (select.groupClause ?? []).length > 0 || windows.length > 0) {
        throw new SqlError(SqlState.featureNotSupported, 'set-returning functions together with aggregates or window functions are not supported');
      }
      if (lifted.length > 0) {
        const kept: Expression[] = plan.columns.map((c, i) => ({ kind: 'Column', index: i, type: c.type }));
        const extra: OutputColumn[] = lifted.map((e, i) => ({ name: `?srf_argument${i}?`, type: e.type, tableOid: 0, columnNumber: 0 }));
        plan = { kind: 'Project', input: plan, expressions: [...kept, ...lifted], columns: [...plan.columns, ...extra] };
      }
      const width = plan.columns.length;
      // Several set-returning functions run in lockstep, the shorter ones padded with NULLs (PostgreSQL 10's rule, ROWS FROM).
      const parts = setReturning.map((entry) => entry.part);
      const right: Plan = parts.length === 1 ? parts[0]! : {
        kind: 'TableFunction',
        name: 'rows_from',
        args: parts.flatMap((part) => part.args),
        withOrdinality: false,
        columns: parts.flatMap((part) => part.columns),
        parts: parts.map((part) => ({ name: part.name as SetReturningName, argCount: part.args.length })),
      };
      plan = { kind: 'Join', joinType: 'inner', left: plan, right, lateral: true, columns: [...plan.columns, ...right.columns] };
      const count = setReturning.length;
      const unmark = (e: Expression): Expression => rewriteColumns(e, (index, type) => ({ kind: 'Column', index: index >= SET_RETURNING_MARK && index < SET_RETURNING_MARK + count ? width + index - SET_RETURNING_MARK : index, type }));
      targets = targets.map((t) => ({ ...t, expression: unmark(t.expression) }));
    }

    // ORDER BY: an output column by number or name, or an expression over the FROM scope.
    const orderBy = ((select.sortClause ?? []) as Node[]).map((n) => {
      const sortBy = (n as any).SortBy as SortBy;
      const target = this.outputReference(sortBy.node!, targets, 'ORDER BY');
      const expression = target ?? this.expressions.bind(sortBy.node!, scope, collector);
      return { sortBy, expression, target };
    });
    const distinctClause = select.distinctClause as Node[] | undefined;
    const distinctOn = distinctClause !== undefined && distinctClause.length > 0 && Object.keys(distinctClause[0]!).length > 0
      ? distinctClause.map((n) => this.outputReference(n, targets, 'DISTINCT ON') ?? this.expressions.bind(n, scope, collector))
      : undefined;

    // GROUP BY keys: output column numbers, input columns, output names, expressions.
    const bindGroupKey = (n: Node): Expression => {
      const ordinal = ordinalOf(n);
      if (ordinal !== undefined) {
        if (ordinal < 1 || ordinal > targets.length) throw new SqlError(SqlState.invalidColumnReference, `GROUP BY position ${ordinal} is not in select list`, { position: locationOf(n) });
        return targets[ordinal - 1]!.expression;
      }
      const groupCollector: CallCollector = { clause: 'GROUP BY' };
      try {
        return this.expressions.bind(n, scope, groupCollector);
      } catch (error) {
        const name = singleName(n);
        const match = name === undefined ? undefined : targets.find((t) => t.name === name);
        if (error instanceof SqlError && error.code === SqlState.undefinedColumn && match !== undefined) return match.expression;
        throw error;
      }
    };
    const groupClause = (select.groupClause ?? []) as Node[];
    let groupKeys: Expression[];
    let groupingSets: number[][] | undefined;
    if (groupClause.some((n) => 'GroupingSet' in n)) {
      // GROUPING SETS / ROLLUP / CUBE: the cross product of each item's sets, PostgreSQL's order;
      // the keys are the distinct expressions of all sets.
      let sets: Node[][] = [[]];
      for (const item of groupClause) {
        const expanded = expandGroupingElement(item, true);
        sets = sets.flatMap((prefix) => expanded.map((set) => [...prefix, ...set]));
        if (sets.length > MAX_GROUPING_SETS) {
          throw new SqlError(SqlState.statementTooComplex, `too many grouping sets present (maximum ${MAX_GROUPING_SETS})`, { position: locationOf(item) });
        }
      }
      groupKeys = [];
      const keyPositions = new Map<string, number>();
      const positionOfKey = (n: Node): number => {
        const bound = bindGroupKey(n);
        const key = expressionKey(bound);
        let index = keyPositions.get(key);
        if (index === undefined) {
          index = groupKeys.length;
          groupKeys.push(bound);
          keyPositions.set(key, index);
        }
        return index;
      };
      groupingSets = sets.map((set) => [...new Set(set.map(positionOfKey))]);
      if (select.groupDistinct === true) {
        const seen = new Set<string>();
        groupingSets = groupingSets.filter((set) => {
          const key = [...set].sort((a, b) => a - b).join(',');
          if (seen.has(key)) return false;
          seen.add(key);
          return true;
        });
      }
    } else {
      groupKeys = groupClause.map(bindGroupKey);
    }
    for (const key of groupKeys) {
      if (containsMark(key, AGGREGATE_MARK)) throw new SqlError(SqlState.groupingError, 'aggregate functions are not allowed in GROUP BY');
    }

    let finalTargets = targets;
    let finalHaving = having;
    let finalOrder = orderBy.map((o) => o.expression);
    let finalDistinctOn = distinctOn;
    let finalWindows = windows;
    if (aggregates.length > 0 || groupKeys.length > 0 || having !== undefined || groupingCalls.length > 0) {
      const keyIndex = new Map<string, number>();
      groupKeys.forEach((k, i) => {
        if (!keyIndex.has(expressionKey(k))) keyIndex.set(expressionKey(k), i);
      });
      const groupingKeys = groupingCalls.map((call) => {
        if (call.args.length > 31) throw new SqlError(SqlState.tooManyArguments, 'GROUPING must have fewer than 32 arguments', { position: call.position });
        return call.args.map((arg, i) => {
          const k = keyIndex.get(expressionKey(arg));
          if (k === undefined) throw new SqlError(SqlState.groupingError, 'arguments to GROUPING must be grouping expressions of the associated query level', { position: call.positions[i] });
          return k;
        });
      });
      const columnName = (index: number): string => {
        for (const r of scope.relations) for (const c of r.columns) if (c.index === index) return r.alias === '' ? c.name : `${r.alias}.${c.name}`;
        return `column ${index}`;
      };
      const rewrite = (e: Expression): Expression => {
        const k = keyIndex.get(expressionKey(e));
        if (k !== undefined) return { kind: 'Column', index: k, type: e.type };
        if (e.kind === 'Column') {
          if (e.index >= GROUPING_MARK) return { kind: 'Column', index: groupKeys.length + aggregates.length + e.index - GROUPING_MARK, type: e.type };
          if (e.index >= WINDOW_MARK) return e;
          if (e.index >= AGGREGATE_MARK) return { kind: 'Column', index: groupKeys.length + e.index - AGGREGATE_MARK, type: e.type };
          throw new SqlError(SqlState.groupingError, `column "${columnName(e.index)}" must appear in the GROUP BY clause or be used in an aggregate function`, { position: e.position });
        }
        if (e.kind === 'Subquery' && e.correlated) {
          // The subquery reads the host row, which is now the Aggregate's output: each outer
          // column it reads must be a group key.
          const map = new Map<number, number>();
          for (const index of outerColumnsOf(e.plan, 1, new Set())) {
            const grouped = groupKeys.findIndex((g) => g.kind === 'Column' && g.index === index);
            if (grouped < 0) {
              throw new SqlError(SqlState.groupingError, `subquery uses ungrouped column "${columnName(index)}" from outer query`);
            }
            map.set(index, grouped);
          }
          return { ...e, plan: remapOuterInPlan(e.plan, 1, (index) => map.get(index)!), ...(e.test ? { test: rewrite(e.test) } : {}) };
        }
        return mapChildren(e, rewrite);
      };
      finalTargets = targets.map((t) => ({ ...t, expression: rewriteWithPosition(rewrite, t.expression, t.position) }));
      finalHaving = having === undefined ? undefined : rewrite(having);
      finalOrder = finalOrder.map(rewrite);
      finalDistinctOn = distinctOn?.map(rewrite);
      finalWindows = windows.map((w) => ({
        ...w,
        args: w.args.map(rewrite),
        partitionBy: w.partitionBy.map(rewrite),
        orderBy: w.orderBy.map((k) => ({ ...k, expression: rewrite(k.expression) })),
        ...(w.filter ? { filter: rewrite(w.filter) } : {}),
      }));
      const columns: OutputColumn[] = [
        ...groupKeys.map((k, i) => ({ name: `group${i + 1}`, type: k.type, tableOid: 0, columnNumber: 0 })),
        ...aggregates.map((a) => ({ name: a.name, type: a.type, tableOid: 0, columnNumber: 0 })),
        ...groupingKeys.map(() => ({ name: 'grouping', type: INT4, tableOid: 0, columnNumber: 0 })),
      ];
      plan = {
        kind: 'Aggregate',
        input: plan,
        groupKeys,
        aggregates,
        ...(groupingSets !== undefined ? { groupingSets } : {}),
        ...(groupingKeys.length > 0 ? { groupingCalls: groupingKeys } : {}),
        columns,
      };
      if (finalHaving !== undefined) plan = { kind: 'Filter', input: plan, predicate: finalHaving, columns: plan.columns };
    }

    if (finalWindows.length > 0) {
      const width = plan.columns.length;
      const columns = [...plan.columns, ...finalWindows.map((w) => ({ name: w.name, type: w.type, tableOid: 0, columnNumber: 0 }))];
      plan = { kind: 'Window', input: plan, calls: finalWindows, columns };
      const unmark = (e: Expression): Expression => rewriteColumns(e, (index, type) => ({ kind: 'Column', index: index >= WINDOW_MARK ? width + index - WINDOW_MARK : index, type }));
      finalTargets = finalTargets.map((t) => ({ ...t, expression: unmark(t.expression) }));
      finalOrder = finalOrder.map(unmark);
      finalDistinctOn = finalDistinctOn?.map(unmark);
    }

    // The select list, plus ORDER BY expressions that are not in it (dropped after sorting).
    const isDistinct = distinctClause !== undefined;
    const projected = finalTargets.map((t) => (t.expression.type.name === 'unknown' && !keepUnknown ? { ...t, expression: this.context.coerce(t.expression, TEXT, 'implicit') } : t));
    const expressions = projected.map((t) => t.expression);
    const outputKeys = expressions.map(expressionKey);
    const sortKeys: SortKey[] = [];
    orderBy.forEach((o, i) => {
      let index = o.target !== undefined ? targets.findIndex((t) => t.expression === o.target) : -1;
      if (index < 0) index = outputKeys.indexOf(expressionKey(finalOrder[i]!));
      if (index < 0) {
        if (isDistinct && distinctOn === undefined) {
          throw new SqlError(SqlState.invalidColumnReference, 'for SELECT DISTINCT, ORDER BY expressions must appear in select list', { position: locationOf(o.sortBy.node!) });
        }
        expressions.push(finalOrder[i]!);
        index = expressions.length - 1;
      }
      sortKeys.push(sortKey({ kind: 'Column', index, type: expressions[index]!.type }, o.sortBy));
    });
    const distinctOnColumns = finalDistinctOn?.map((e) => {
      // Look among every projected expression, ORDER BY extras included (DISTINCT ON (v1) ... ORDER BY v1).
      const key = expressionKey(e);
      let index = expressions.findIndex((x) => expressionKey(x) === key);
      if (index < 0) {
        expressions.push(e);
        index = expressions.length - 1;
      }
      return { kind: 'Column', index, type: e.type } as Expression;
    });
    const visibleCount = projected.length;
    const columns: OutputColumn[] = expressions.map((e, i) => {
      const t = projected[i];
      return t === undefined
        ? { name: `?sort${i}`, type: e.type, tableOid: 0, columnNumber: 0 }
        : { name: t.name, type: e.type, tableOid: t.tableOid, columnNumber: t.columnNumber };
    });
    plan = { kind: 'Project', input: plan, expressions, columns };

    if (distinctOnColumns !== undefined) {
      // DISTINCT ON keeps the first row of each key in ORDER BY order: sort by the keys then the order.
      for (let i = 0; i < Math.min(sortKeys.length, distinctOnColumns.length); i++) {
        if (expressionKey(sortKeys[i]!.expression) !== expressionKey(distinctOnColumns[i]!) && sortKeys.length > 0) {
          const onKeys = new Set(distinctOnColumns.map(expressionKey));
          if (!onKeys.has(expressionKey(sortKeys[i]!.expression))) {
            throw new SqlError(SqlState.invalidColumnReference, 'SELECT DISTINCT ON expressions must match initial ORDER BY expressions');
          }
        }
      }
      const onKeys = distinctOnColumns.map((e) => sortKeys.find((k) => expressionKey(k.expression) === expressionKey(e)) ?? { expression: e, descending: false, nullsFirst: false });
      const onKeyTexts = new Set(onKeys.map((k) => expressionKey(k.expression)));
      const keys = [...onKeys, ...sortKeys.filter((k) => !onKeyTexts.has(expressionKey(k.expression)))];
      plan = { kind: 'Sort', input: plan, keys, columns };
      plan = { kind: 'Distinct', input: plan, on: distinctOnColumns, columns };
    } else {
      if (isDistinct) plan = { kind: 'Distinct', input: plan, columns };
      if (sortKeys.length > 0) plan = { kind: 'Sort', input: plan, keys: sortKeys, columns };
    }
    plan = this.limit(plan, select, outer);
    if (expressions.length > visibleCount) {
      plan = {
        kind: 'Project',
        input: plan,
        expressions: columns.slice(0, visibleCount).map((c, i) => ({ kind: 'Column', index: i, type: c.type })),
        columns: columns.slice(0, visibleCount),
      };
    }
    return plan;
  }

  /** ORDER BY / GROUP BY item naming an output column (by number, or by a name that is an output alias). */
  private outputReference(node: Node, targets: readonly Target[], clause: string): Expression | undefined {
    const ordinal = ordinalOf(node);
    if (ordinal !== undefined) {
      if (ordinal < 1 || ordinal > targets.length) throw new SqlError(SqlState.invalidColumnReference, `${clause} position ${ordinal} is not in select list`, { position: locationOf(node) });
      return targets[ordinal - 1]!.expression;
    }
    const name = singleName(node);
    if (name === undefined) return undefined;
    const matches = targets.filter((t) => t.name === name);
    if (matches.length === 0) return undefined;
    if (matches.length > 1 && !matches.every((m) => expressionKey(m.expression) === expressionKey(matches[0]!.expression))) {
      throw new SqlError(SqlState.ambiguousColumn, `${clause} "${name}" is ambiguous`, { position: locationOf(node) });
    }
    return matches[0]!.expression;
  }

  bindTargets(list: readonly Node[], scope: Scope, collector: CallCollector): Target[] {
    const targets: Target[] = [];
    for (const node of list) {
      const target = (node as any).ResTarget as ResTarget;
      const value = target.val!;
      const position = positionOf(target.location);
      const columnRef = (value as any).ColumnRef;
      if (columnRef !== undefined && 'A_Star' in columnRef.fields[columnRef.fields.length - 1]) {
        const expanded = this.expandStar(columnRef.fields.slice(0, -1).map((f: any) => f.String.sval as string), scope, position);
        // RisingWave's `* EXCEPT (a, b)` (sql/parser/star-except.ts): every name must be one of the star's columns.
        const except = (target as { oxbowExcept?: readonly string[] }).oxbowExcept;
        if (except !== undefined) {
          for (const name of except) {
            if (!expanded.some((t) => t.name === name)) throw new SqlError(SqlState.undefinedColumn, `column "${name}" does not exist`, { position });
          }
        }
        targets.push(...(except === undefined ? expanded : expanded.filter((t) => !except.includes(t.name))));
        continue;
      }
      const expression = this.expressions.bind(value, scope, collector);
      const origin = expression.kind === 'Column' ? columnOrigin(scope, expression.index) : undefined;
      targets.push({
        name: target.name ?? figureName(value) ?? '?column?',
        expression,
        tableOid: origin?.tableOid ?? 0,
        columnNumber: origin?.columnNumber ?? 0,
        position,
      });
    }
    return targets;
  }

  private expandStar(qualifier: readonly string[], scope: Scope, position: number | undefined): Target[] {
    const out: Target[] = [];
    if (qualifier.length === 0) {
      if (scope.relations.length === 0) throw new SqlError(SqlState.syntaxError, 'SELECT * with no tables specified is not valid', { position });
      const mergedNames = new Set(scope.merged.map((m) => m.name));
      for (const m of scope.merged) out.push({ name: m.name, expression: m.expression, tableOid: 0, columnNumber: 0, position });
      for (const r of scope.relations) {
        for (const c of r.columns) {
          if (c.hidden || mergedNames.has(c.name)) continue;
          out.push({ name: c.name, expression: { kind: 'Column', index: c.index, type: c.type }, tableOid: c.tableOid, columnNumber: c.columnNumber, position });
        }
      }
      return out;
    }
    const relation = scope.findRelation(qualifier, position);
    if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `missing FROM-clause entry for table "${qualifier[qualifier.length - 1]}"`, { position });
    for (const c of relation.columns) {
      if (c.hidden) continue;
      out.push({ name: c.name, expression: { kind: 'Column', index: c.index, type: c.type }, tableOid: c.tableOid, columnNumber: c.columnNumber, position });
    }
    return out;
  }
}

function sameTypeDeep(a: DataType, b: DataType): boolean {
  if (a.name !== b.name || a.typmod !== b.typmod) return false;
  if (a.name === 'array') return a.element !== undefined && b.element !== undefined && sameTypeDeep(a.element, b.element);
  return true;
}

function hasSubqueryExpression(e: Expression): boolean {
  if (e.kind === 'Subquery') return true;
  let found = false;
  mapChildren(e, (child) => {
    if (hasSubqueryExpression(child)) found = true;
    return child;
  });
  return found;
}

/** An expression over the FROM row, moved to the LATERAL side: the FROM row is now one level out. */
function toLateral(e: Expression): Expression {
  if (e.kind === 'Column') return { kind: 'OuterColumn', depth: 1, index: e.index, type: e.type };
  if (e.kind === 'OuterColumn') return { ...e, depth: e.depth + 1 };
  return mapChildren(e, toLateral);
}

function readsWorkTable(plan: Plan, id: number): boolean {
  if (plan.kind === 'WorkTable') return plan.id === id;
  return nestedInputs(plan).some((input) => readsWorkTable(input.plan, id));
}

function aggregateKey(call: AggregateCall): string {
  return JSON.stringify([
    call.name,
    call.distinct,
    call.args.map(expressionKey),
    call.filter === undefined ? null : expressionKey(call.filter),
    (call.orderBy ?? []).map((k) => [expressionKey(k.expression), k.descending, k.nullsFirst]),
  ]);
}

function rewriteWithPosition(rewrite: (e: Expression) => Expression, expression: Expression, position: number | undefined): Expression {
  try {
    return rewrite(expression);
  } catch (error) {
    if (error instanceof SqlError) throw error.withPosition(position);
    throw error;
  }
}

function containsMark(e: Expression, mark: number): boolean {
  let found = false;
  rewriteColumns(e, (index, type) => {
    if (index >= mark) found = true;
    return { kind: 'Column', index, type };
  });
  return found;
}

function columnOrigin(scope: Scope, index: number): { tableOid: number; columnNumber: number } | undefined {
  for (const r of scope.relations) for (const c of r.columns) if (c.index === index) return c;
  return undefined;
}

export function sortKey(expression: Expression, sortBy: SortBy): SortKey {
  const descending = sortBy.sortby_dir === 'SORTBY_DESC';
  if (sortBy.sortby_dir === 'SORTBY_USING') throw new SqlError(SqlState.featureNotSupported, 'ORDER BY ... USING is not supported');
  const nullsFirst = sortBy.sortby_nulls === 'SORTBY_NULLS_FIRST' ? true : sortBy.sortby_nulls === 'SORTBY_NULLS_LAST' ? false : descending;
  return { expression, descending, nullsFirst };
}

function ordinalOf(node: Node): number | undefined {
  const constant = (node as any).A_Const;
  if (constant?.ival !== undefined) return constant.ival.ival ?? 0;
  return undefined;
}

function singleName(node: Node): string | undefined {
  const fields = (node as any).ColumnRef?.fields as Node[] | undefined;
  if (fields?.length !== 1 || !('String' in fields[0]!)) return undefined;
  return (fields[0] as any).String.sval;
}

/** PostgreSQL's FigureColname: the name a select-list item gets without AS. */
export function figureName(node: Node): string | undefined {
  const [tag, body] = Object.entries(node)[0] as [string, any];
  switch (tag) {
    case 'ColumnRef': {
      const last = body.fields[body.fields.length - 1];
      return 'String' in last ? last.String.sval : undefined;
    }
    case 'FuncCall':
      return body.funcname[body.funcname.length - 1].String.sval;
    case 'TypeCast':
      return figureName(body.arg) ?? body.typeName.names[body.typeName.names.length - 1].String.sval;
    case 'GroupingFunc':
      return 'grouping';
    case 'CaseExpr':
      return 'case';
    case 'CoalesceExpr':
      return 'coalesce';
    case 'MinMaxExpr':
      return body.op === 'IS_GREATEST' ? 'greatest' : 'least';
    case 'A_Expr':
      return body.kind === 'AEXPR_NULLIF' ? 'nullif' : undefined;
    case 'SubLink':
      if (body.subLinkType === 'EXISTS_SUBLINK') return 'exists';
      if (body.subLinkType === 'ARRAY_SUBLINK') return 'array';
      if (body.subLinkType === 'EXPR_SUBLINK') {
        const inner = body.subselect.SelectStmt;
        const first = inner?.targetList?.[0]?.ResTarget;
        return first?.name ?? (first?.val ? figureName(first.val) : undefined);
      }
      return undefined;
    case 'A_ArrayExpr':
      return 'array';
    case 'SQLValueFunction': {
      const names: Record<string, string> = {
        SVFOP_CURRENT_DATE: 'current_date', SVFOP_CURRENT_TIME: 'current_time', SVFOP_CURRENT_TIME_N: 'current_time',
        SVFOP_CURRENT_TIMESTAMP: 'current_timestamp', SVFOP_CURRENT_TIMESTAMP_N: 'current_timestamp', SVFOP_LOCALTIME: 'localtime',
        SVFOP_LOCALTIMESTAMP: 'localtimestamp', SVFOP_CURRENT_ROLE: 'current_role', SVFOP_CURRENT_USER: 'current_user',
        SVFOP_USER: 'current_user', SVFOP_SESSION_USER: 'session_user', SVFOP_CURRENT_CATALOG: 'current_catalog', SVFOP_CURRENT_SCHEMA: 'current_schema',
      };
      return names[body.op];
    }
    case 'CollateClause':
      return figureName(body.arg);
    default:
      return undefined;
  }
}

export { isWindowOnly };

/** The grouping sets one GROUP BY item stands for (each a list of key expressions), in PostgreSQL's order. */
function expandGroupingElement(node: Node, top: boolean): Node[][] {
  const set = (node as { GroupingSet?: { kind: string; content?: Node[] } }).GroupingSet;
  if (set === undefined) {
    const row = (node as { RowExpr?: { args?: Node[]; row_format?: string } }).RowExpr;
    // `(a, b)` inside GROUPING SETS / ROLLUP / CUBE is one set of two keys
    if (!top && row !== undefined && row.row_format === 'COERCE_IMPLICIT_CAST') return [row.args ?? []];
    return [[node]];
  }
  const content = set.content ?? [];
  const simple = (n: Node): Node[] => {
    const row = (n as { RowExpr?: { args?: Node[]; row_format?: string } }).RowExpr;
    return row !== undefined && row.row_format === 'COERCE_IMPLICIT_CAST' ? (row.args ?? []) : [n];
  };
  switch (set.kind) {
    case 'GROUPING_SET_EMPTY':
      return [[]];
    case 'GROUPING_SET_SIMPLE':
      return [content];
    case 'GROUPING_SET_ROLLUP': {
      const items = content.map(simple);
      const sets: Node[][] = [];
      for (let length = items.length; length >= 0; length--) sets.push(items.slice(0, length).flat());
      return sets;
    }
    case 'GROUPING_SET_CUBE': {
      const items = content.map(simple);
      if (items.length > 12) throw new SqlError(SqlState.programLimitExceeded, 'CUBE is limited to 12 elements', { position: locationOf(node) });
      const sets: Node[][] = [];
      for (let mask = (1 << items.length) - 1; mask >= 0; mask--) {
        sets.push(items.filter((_, i) => (mask & (1 << (items.length - 1 - i))) !== 0).flat());
      }
      return sets;
    }
    default:
      return content.flatMap((n) => expandGroupingElement(n, false));
  }
}

/**
 * `CORRESPONDING [BY (names)]` (RisingWave, SQL:2016): both sides projected to the columns they share
 * by name, in the left side's order, or to the BY list in its order (RisingWave's errors, 42601).
 */
function correspondingSides(left: Plan, right: Plan, clause: CorrespondingClause, operation: string): [Plan, Plan] {
  const position = clause.location + 1;
  const indexIn = (plan: Plan, name: string): number => plan.columns.findIndex((c) => c.name === name);
  let names: string[];
  if (clause.by !== undefined) {
    for (const name of clause.by) {
      if (indexIn(left, name) < 0 || indexIn(right, name) < 0) {
        throw new SqlError(SqlState.syntaxError, `Column name \`${name}\` in CORRESPONDING BY is not found in a side of the ${operation} operation. It shall be included in both sides.`, { position });
      }
    }
    names = [...clause.by];
  } else {
    names = [...new Set(left.columns.map((c) => c.name))].filter((name) => indexIn(right, name) >= 0);
    if (names.length === 0) {
      const list = (plan: Plan) => `(${plan.columns.map((c) => `"${c.name}"`).join(', ')})`;
      throw new SqlError(
        SqlState.syntaxError,
        `When CORRESPONDING is specified, at least one column of the left side shall have a column name that is the column name of some column of the right side in a ${operation} operation. Left side query column list: ${list(left)}. Right side query column list: ${list(right)}.`,
        { position },
      );
    }
  }
  const project = (plan: Plan): Plan => {
    const indexes = names.map((name) => indexIn(plan, name));
    return { kind: 'Project', input: plan, expressions: indexes.map((i): Expression => ({ kind: 'Column', index: i, type: plan.columns[i]!.type })), columns: indexes.map((i) => plan.columns[i]!) };
  };
  return [project(left), project(right)];
}
