// The FROM clause: table references (catalog relations with FOR SYSTEM_TIME, CTEs), subqueries,
// table functions (generate_series, unnest, scalar functions), and joins (inner, left, right,
// full, cross, USING, NATURAL, LATERAL). Produces a logical plan and the scope naming its columns.

import type { Node, RangeVar, JoinExpr } from '@pgsql/types';
import { type DataType, arrayOf, type as scalar } from '../../sql/types.js';
import { displayTypeName } from './type-name.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { RelationDef } from '../../sql/catalog.js';
import type { SystemTimeClause } from '../../sql/parser/ast.js';
import type { Expression } from '../expression.js';
import type { JoinType, OutputColumn, Plan, SetReturningName, SystemTime } from '../plan.js';
import { planUsesOuter } from '../walk.js';
import { parse } from '../../sql/parser/index.js';
import { sqlKeywords } from '../../sql/parser/keywords.js';
import { bindTimeWindow } from './time-window.js';

const MAX_VIEW_DEPTH = 32;
import { type BinderContext, positionOf } from './context.js';
import { partitionAncestorsAsUnnest, type ExpressionBinder } from './expression.js';
import { Scope, type ScopeRelation } from './scope.js';

const TIMESTAMPTZ = scalar('timestamptz');

export interface FromItem {
  readonly plan: Plan;
  /** Relations (column indexes from 0 within this item). */
  readonly relations: ScopeRelation[];
  readonly merged: Scope['merged'];
  /**
   * true: bound in the scope of the FROM items to its left (LATERAL subqueries, functions in FROM),
   * so its depth-1 outer references are the left row and deeper ones the enclosing queries, shifted
   * by one; false: bound in the enclosing query's scope (depth 1 is the enclosing row), never
   * lateral; undefined: lateral when it reads depth 1.
   */
  readonly scopedUnderLeft?: boolean;
}

export type QueryBinder = (select: Node, outer: Scope | undefined) => Plan;

export class FromBinder {
  constructor(
    readonly context: BinderContext,
    readonly expressions: ExpressionBinder,
    readonly bindQuery: QueryBinder,
  ) {}

  /** Binds a whole FROM list; `outer` is the enclosing query's scope (for correlation). */
  bindFromList(items: readonly Node[], outer: Scope | undefined): { plan: Plan; scope: Scope } {
    const scope = new Scope(outer);
    if (items.length === 0) {
      return { plan: { kind: 'Values', rows: [[]], columns: [] }, scope };
    }
    let current: FromItem | undefined;
    for (const item of items) {
      const leftScope = current === undefined ? undefined : scopeOf(current, outer);
      const right = this.bindItem(item, outer, leftScope);
      current = current === undefined ? right : this.join(current, right, 'inner', undefined, positionOf(undefined), outer);
    }
    for (const r of current!.relations) this.addRelation(scope, r);
    scope.merged.push(...current!.merged);
    return { plan: current!.plan, scope };
  }

  private addRelation(scope: Scope, relation: ScopeRelation): void {
    if (scope.relations.some((r) => r.alias === relation.alias && r.schema === relation.schema && relation.alias !== '')) {
      throw new SqlError(SqlState.duplicateAlias, `table name "${relation.alias}" specified more than once`);
    }
    scope.relations.push(relation);
  }

  /** One FROM item; `leftScope` is what a LATERAL item may see. */
  bindItem(node: Node, outer: Scope | undefined, leftScope: Scope | undefined): FromItem {
    const [tag, body] = Object.entries(node)[0] as [string, any];
    switch (tag) {
      case 'RangeVar':
        return this.rangeVar(body as RangeVar, outer);
      case 'RangeSubselect': {
        const lateralScope = body.lateral && leftScope !== undefined ? leftScope : outer;
        let plan = this.bindQuery(body.subquery, lateralScope);
        const viewId = body.oxbowViewId as number | undefined;
        if (viewId !== undefined) plan = { ...plan, columns: plan.columns.map((c, i) => ({ ...c, tableOid: viewId, columnNumber: i + 1 })) } as Plan;
        return { ...this.named(plan, body.alias, '', positionOf(undefined)), scopedUnderLeft: lateralScope === leftScope && leftScope !== undefined };
      }
      case 'RangeFunction': {
        const item = this.rangeFunction(body, outer, leftScope);
        return leftScope === undefined ? item : { ...item, scopedUnderLeft: true };
      }
      case 'JoinExpr':
        return this.joinExpression(body as JoinExpr, outer, leftScope);
      case 'RangeTableSample':
        return this.tableSample(body, outer, leftScope);
      default:
        throw new SqlError(SqlState.featureNotSupported, `FROM item ${tag} is not supported`);
    }
  }

  /**
   * `t TABLESAMPLE BERNOULLI (p)` / `SYSTEM (p)`: each row kept with probability p / 100. oxbow has
   * no pages, so SYSTEM's page-level choice is the row-level one (each row is its own block).
   * The percentage must be a constant (PostgreSQL evaluates it once); REPEATABLE is refused.
   */
  private tableSample(node: any, outer: Scope | undefined, leftScope: Scope | undefined): FromItem {
    const position = positionOf(node.location);
    const method = ((node.method ?? []) as Node[]).map((n) => (n as { String: { sval: string } }).String.sval).join('.');
    if (method !== 'bernoulli' && method !== 'system') {
      throw new SqlError(SqlState.undefinedObject, `tablesample method ${method} does not exist`, { position });
    }
    const args = (node.args ?? []) as Node[];
    if (args.length !== 1) {
      throw new SqlError(SqlState.syntaxError, `tablesample method ${method} requires 1 argument, not ${args.length}`, { position });
    }
    if (node.repeatable !== undefined) throw new SqlError(SqlState.featureNotSupported, 'TABLESAMPLE ... REPEATABLE is not supported', { position });
    const item = this.bindItem(node.relation as Node, outer, leftScope);
    const bound = this.context.coerce(this.expressions.bind(args[0]!, new Scope(undefined), { clause: 'TABLESAMPLE' }), scalar('float4'), 'implicit', position);
    const folded = bound.kind === 'Cast' && bound.input.kind === 'Literal' ? bound.input : bound;
    if (folded.kind !== 'Literal') throw new SqlError(SqlState.featureNotSupported, 'TABLESAMPLE percentage must be a constant', { position });
    const percent = folded.value === null ? null : Number(folded.value.toString());
    if (percent === null) throw new SqlError(SqlState.invalidTablesampleArgument, 'TABLESAMPLE parameter cannot be null', { position });
    if (!(percent >= 0 && percent <= 100)) {
      throw new SqlError(SqlState.invalidTablesampleArgument, 'sample percentage must be between 0 and 100', { position });
    }
    const random = this.context.function('random', [], position);
    const scaled = this.context.operator('*', random, { kind: 'Literal', value: 100, type: scalar('float8') }, position);
    const predicate = this.context.operator('<', scaled, { kind: 'Literal', value: percent, type: scalar('float8') }, position);
    return { ...item, plan: { kind: 'Filter', input: item.plan, predicate, columns: item.plan.columns } };
  }

  private rangeVar(node: RangeVar, outer: Scope | undefined): FromItem {
    const position = positionOf(node.location);
    const name = node.relname!;
    const systemTime = (node as { oxbowSystemTime?: SystemTimeClause }).oxbowSystemTime;
    if (node.schemaname === undefined) {
      const cte = this.context.findCte(name);
      if (cte !== undefined) {
        if (systemTime !== undefined) throw new SqlError(SqlState.featureNotSupported, 'FOR SYSTEM_TIME applies to tables and views, not to a WITH query', { position });
        return this.named(cte.plan, node.alias, name, position);
      }
    }
    if (node.schemaname !== undefined && this.context.planner.catalog.schema(node.schemaname) === undefined) {
      throw new SqlError(SqlState.invalidSchemaName, `schema "${node.schemaname}" does not exist`, { position });
    }
    const relation = this.context.planner.catalog.resolveRelation(node.schemaname, name, this.context.planner.searchPath);
    if (relation === undefined) {
      const shown = node.schemaname === undefined ? name : `${node.schemaname}.${name}`;
      throw new SqlError(SqlState.undefinedTable, `relation "${shown}" does not exist`, { position });
    }
    if (relation.kind === 'sequence') {
      if (systemTime !== undefined) throw new SqlError(SqlState.featureNotSupported, 'FOR SYSTEM_TIME applies to tables and views, not to a sequence', { position });
      return this.viewItem(sequenceAsView(relation), node, undefined);
    }
    if (relation.kind === 'sink' || relation.kind === 'index' || relation.kind === 'subscription') {
      throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is ${relation.kind === 'sink' ? 'a sink' : relation.kind === 'subscription' ? 'a subscription' : 'an index'}`, { position });
    }
    if (relation.kind === 'view' && relation.definition !== undefined) return this.viewItem(relation, node, systemTime);
    return this.scanItem(relation, systemTime, node, outer);
  }

  /** A (non-materialized) view: its defining query, bound in place (no enclosing scope). */
  private viewItem(relation: RelationDef, node: RangeVar, systemTime: SystemTimeClause | undefined): FromItem {
    const position = positionOf(node.location);
    if (systemTime !== undefined) {
      throw new SqlError(SqlState.featureNotSupported, `FOR SYSTEM_TIME is not supported on view "${relation.name}" (it has no stored history; use a materialized view)`, { position });
    }
    if (this.context.viewDepth >= MAX_VIEW_DEPTH) {
      throw new SqlError(SqlState.invalidObjectDefinition, `infinite recursion detected in rules for relation "${relation.name}"`, { position });
    }
    const [statement] = parse(relation.definition!);
    this.context.viewDepth++;
    const savedCtes = this.context.ctes.splice(0);
    let plan: Plan;
    try {
      plan = this.bindQuery(statement!.node as Node, undefined);
    } finally {
      this.context.viewDepth--;
      this.context.ctes.push(...savedCtes);
    }
    // The view's columns keep the view's own names (CREATE VIEW v (a, b) AS ...).
    const columns = plan.columns.map((c, i) => ({ ...c, name: relation.columns[i]?.name ?? c.name, tableOid: relation.id, columnNumber: i + 1 }));
    const renamed = { ...plan, columns } as Plan;
    return this.named(renamed, node.alias ?? { aliasname: relation.name }, relation.name, position);
  }

  private scanItem(relation: RelationDef, clause: SystemTimeClause | undefined, node: RangeVar, outer: Scope | undefined): FromItem {
    const position = positionOf(node.location);
    let systemTime: SystemTime | undefined;
    const bindTime = (expression: Node): Expression => {
      const bound = this.expressions.bind(expression, new Scope(outer), { clause: 'FOR SYSTEM_TIME' });
      if (bound.type.name === 'unknown') return this.context.coerce(bound, TIMESTAMPTZ, 'implicit', positionOf(clause?.location));
      const allowed = ['timestamptz', 'timestamp', 'date', 'int2', 'int4', 'int8', 'numeric', 'float4', 'float8', 'text', 'varchar'];
      if (!allowed.includes(bound.type.name)) {
        throw new SqlError(SqlState.datatypeMismatch, `FOR SYSTEM_TIME needs a timestamp or unix seconds, not type ${bound.type.name}`, { position: positionOf(clause?.location) });
      }
      return bound;
    };
    if (clause?.kind === 'asOf') systemTime = isProctime(clause.at) ? { kind: 'proctime', position: positionOf(clause.location) } : { kind: 'asOf', at: bindTime(clause.at) };
    if (clause?.kind === 'between') systemTime = { kind: 'between', from: bindTime(clause.from), to: bindTime(clause.to) };
    const columns: OutputColumn[] = relation.columns.map((c, i) => ({ name: c.name, type: c.type, tableOid: relation.id, columnNumber: i + 1 }));
    const hidden = relation.columns.map((c) => c.hidden);
    if (systemTime?.kind === 'between') {
      columns.push({ name: 'oxbow_valid_from', type: TIMESTAMPTZ, tableOid: 0, columnNumber: 0 });
      columns.push({ name: 'oxbow_valid_to', type: TIMESTAMPTZ, tableOid: 0, columnNumber: 0 });
      hidden.push(false, false);
    }
    const plan: Plan = {
      kind: 'Scan',
      relation,
      ...(systemTime === undefined ? {} : { systemTime }),
      projection: columns.map((_, i) => i),
      columns,
    };
    const alias = node.alias?.aliasname ?? relation.name;
    const colnames = (node.alias?.colnames ?? []).map((n) => (n as any).String.sval as string);
    let visible = 0;
    const scopeColumns = columns.map((c, i) => {
      const renamed = !hidden[i] && visible < colnames.length ? colnames[visible++]! : c.name;
      return { name: renamed, type: c.type, hidden: hidden[i]!, tableOid: c.tableOid, columnNumber: c.columnNumber, index: i };
    });
    if (colnames.length > visible) {
      throw new SqlError(SqlState.invalidColumnReference, `table "${alias}" has ${visible} columns available but ${colnames.length} columns specified`, { position });
    }
    return {
      plan,
      relations: [{ alias, ...(node.alias === undefined ? { schema: relation.schema } : {}), columns: scopeColumns }],
      merged: [],
    };
  }

  /** A derived table (subquery, CTE, function) under an alias with optional column names. */
  private named(plan: Plan, alias: any, defaultName: string, position: number | undefined): FromItem {
    const colnames = ((alias?.colnames ?? []) as Node[]).map((n) => (n as any).String.sval as string);
    if (colnames.length > plan.columns.length) {
      throw new SqlError(SqlState.invalidColumnReference, `table "${alias.aliasname}" has ${plan.columns.length} columns available but ${colnames.length} columns specified`, { position });
    }
    const columns = plan.columns.map((c, i) => ({
      name: colnames[i] ?? c.name,
      type: c.type,
      hidden: false,
      tableOid: c.tableOid,
      columnNumber: c.columnNumber,
      index: i,
    }));
    const renamed: Plan = colnames.length === 0 ? plan : { ...plan, columns: plan.columns.map((c, i) => ({ ...c, name: colnames[i] ?? c.name })) } as Plan;
    return { plan: renamed, relations: [{ alias: alias?.aliasname ?? defaultName, columns }], merged: [] };
  }

  private rangeFunction(body: any, outer: Scope | undefined, leftScope: Scope | undefined): FromItem {
    const functions = body.functions as Node[];
    if (functions.length !== 1) throw new SqlError(SqlState.featureNotSupported, 'ROWS FROM with several functions is not supported');
    let call = ((functions[0] as any).List.items[0] as any).FuncCall;
    const position = positionOf(call.location);
    let name = (call.funcname as Node[]).map((n) => (n as any).String.sval as string).pop()!;
    if (name === 'pg_partition_ancestors' && (call.args ?? []).length === 1) {
      call = partitionAncestorsAsUnnest(call);
      name = 'unnest';
    }
    if (name === 'tumble' || name === 'hop') {
      const tableArgument = ((call.args ?? []) as Node[])[0] as any;
      const fields = (tableArgument?.ColumnRef?.fields ?? []) as Node[];
      if (fields.length === 0 || fields.length > 2 || !fields.every((f) => 'String' in f)) {
        throw new SqlError(SqlState.syntaxError, `the first argument of ${name.toUpperCase()} must name a table`, { position });
      }
      const names = fields.map((f) => (f as any).String.sval as string);
      const rangeVar = { relname: names[names.length - 1], ...(names.length === 2 ? { schemaname: names[0] } : {}), location: tableArgument.ColumnRef.location } as RangeVar;
      const table = this.rangeVar(rangeVar, outer);
      const window = bindTimeWindow(name, table, (call.args ?? []) as Node[], this.context, this.expressions, position, body.alias?.aliasname);
      return { plan: window.plan, relations: window.relations, merged: [] };
    }
    const scope = leftScope !== undefined ? new Scope(leftScope) : new Scope(outer);
    const args = ((call.args ?? []) as Node[]).map((a) => this.expressions.bind(a, scope, { clause: 'functions in FROM' }));
    const ordinality = body.ordinality === true;
    let plan: Plan;
    if (name === 'generate_series' || name === 'unnest' || name === 'generate_subscripts') {
      const { typed, type } = this.setReturningArguments(name, args, position);
      const columns: OutputColumn[] = [{ name, type, tableOid: 0, columnNumber: 0 }];
      if (ordinality) columns.push({ name: 'ordinality', type: scalar('int8'), tableOid: 0, columnNumber: 0 });
      plan = { kind: 'TableFunction', name, args: typed, withOrdinality: ordinality, columns };
    } else if (name === 'pg_options_to_table') {
      // PostgreSQL's option lists ('name=value' text[]) as rows; psql's \d of a foreign table (a source) asks for it.
      if (args.length !== 1 || (args[0]!.type.name !== 'array' && args[0]!.type.name !== 'unknown')) {
        throw new SqlError(SqlState.undefinedFunction, `function pg_options_to_table(${args.map((a) => a.type.name).join(', ')}) does not exist`, { position });
      }
      const text = scalar('text');
      const columns: OutputColumn[] = [
        { name: 'option_name', type: text, tableOid: 0, columnNumber: 0 },
        { name: 'option_value', type: text, tableOid: 0, columnNumber: 0 },
      ];
      if (ordinality) columns.push({ name: 'ordinality', type: scalar('int8'), tableOid: 0, columnNumber: 0 });
      plan = { kind: 'TableFunction', name, args, withOrdinality: ordinality, columns };
    } else if (name === 'pg_get_keywords' && args.length === 0) {
      // PostgreSQL 15's keyword list (sql/parser/keywords.ts), as constant rows.
      const text = scalar('text');
      const literal = (value: string | boolean, type: DataType): Expression => ({ kind: 'Literal', value, type });
      const names = ['word', 'catcode', 'barelabel', 'catdesc', 'baredesc'];
      const types = [text, scalar('char'), scalar('bool'), text, text];
      const columns: OutputColumn[] = names.map((column, i) => ({ name: column, type: types[i]!, tableOid: 0, columnNumber: 0 }));
      const rows = sqlKeywords().map((k) => [literal(k.word, text), literal(k.catcode, types[1]!), literal(k.barelabel, types[2]!), literal(k.catdesc, text), literal(k.baredesc, text)]);
      if (ordinality) throw new SqlError(SqlState.featureNotSupported, 'pg_get_keywords() WITH ORDINALITY is not supported', { position });
      plan = { kind: 'Values', rows, columns };
    } else {
      const value = this.context.function(name, args, position);
      plan = { kind: 'Values', rows: [[value]], columns: [{ name, type: value.type, tableOid: 0, columnNumber: 0 }] };
    }
    const item = this.named(plan, body.alias, name, position);
    if (body.alias === undefined || (body.alias.colnames ?? []).length === 0) {
      // A single-column function named by its alias: the column takes the alias name (PostgreSQL).
      if (body.alias !== undefined && plan.columns.length === 1) {
        const renamed = { ...item.relations[0]!, columns: item.relations[0]!.columns.map((c) => ({ ...c, name: body.alias.aliasname })) };
        return { ...item, relations: [renamed] };
      }
    }
    return item;
  }

  seriesArguments(args: Expression[], position: number | undefined): Expression[] {
    if (args.length < 2 || args.length > 3) throw new SqlError(SqlState.undefinedFunction, 'function generate_series needs 2 or 3 arguments', { position });
    const known = args.slice(0, 2).map((a) => a.type).filter((t) => t.name !== 'unknown');
    let type: DataType = this.context.commonTypeOf(known.length ? known : [scalar('int4')], 'generate_series', position);
    if (type.name === 'int2') type = scalar('int4');
    if (type.name === 'date' || type.name === 'text') type = scalar('timestamptz');
    const supported = ['int4', 'int8', 'numeric', 'timestamp', 'timestamptz'];
    if (!supported.includes(type.name)) {
      throw new SqlError(SqlState.undefinedFunction, `function generate_series(${args.map((a) => a.type.name).join(', ')}) does not exist`, { position });
    }
    const stepType = type.name === 'timestamp' || type.name === 'timestamptz' ? scalar('interval') : type;
    if ((type.name === 'timestamp' || type.name === 'timestamptz') && args.length !== 3) {
      throw new SqlError(SqlState.undefinedFunction, `function generate_series(${args.map((a) => a.type.name).join(', ')}) does not exist`, { position });
    }
    return args.map((a, i) => this.context.coerce(a, i < 2 ? type : stepType, 'implicit', position));
  }

  /** A set-returning function's arguments, typed, and its result type. */
  setReturningArguments(name: SetReturningName, args: Expression[], position: number | undefined): { typed: Expression[]; type: DataType } {
    if (name === 'generate_series') {
      const typed = this.seriesArguments(args, position);
      return { typed, type: typed[0]!.type };
    }
    if (name === 'unnest') {
      const typed = this.unnestArguments(args, position);
      return { typed, type: typed[0]!.type.element! };
    }
    if (name === '_pg_expandarray') {
      // information_schema._pg_expandarray(a): the rows (a[i], i), a record of two fields that
      // oxbow carries as a two-element array of a's element type (see DataType.fields).
      const [array] = this.unnestArguments(args, position);
      const element = array!.type.element!;
      if (!['int2', 'int4', 'int8', 'oid'].includes(element.name)) {
        throw new SqlError(SqlState.featureNotSupported, `_pg_expandarray of ${element.name}[] is not supported (integer arrays only)`, { position });
      }
      return { typed: [array!], type: { ...arrayOf(element), fields: ['x', 'n'] } };
    }
    // generate_subscripts(anyarray, int4 [, bool]): the subscripts of one dimension (arrays start at 1 in oxbow).
    const integer = (e: Expression | undefined) => e !== undefined && (e.type.name === 'int4' || e.type.name === 'int2' || e.type.name === 'int8');
    const array = args[0];
    const valid = array !== undefined && array.type.name === 'array' && integer(args[1]) && (args.length === 2 || (args.length === 3 && args[2]!.type.name === 'bool'));
    if (!valid) {
      throw new SqlError(SqlState.undefinedFunction, `function generate_subscripts(${args.map((a) => displayTypeName(a.type)).join(', ')}) does not exist`, { position, hint: 'No function matches the given name and argument types. You might need to add explicit type casts.' });
    }
    return { typed: args, type: scalar('int4') };
  }

  unnestArguments(args: Expression[], position: number | undefined): Expression[] {
    if (args.length !== 1) throw new SqlError(SqlState.featureNotSupported, 'unnest with several arrays is not supported', { position });
    const arg = args[0]!;
    if (arg.type.name === 'array') return [arg];
    if (arg.type.name === 'unknown') throw new SqlError(SqlState.indeterminateDatatype, 'could not determine polymorphic type because input has type unknown', { position });
    throw new SqlError(SqlState.undefinedFunction, `function unnest(${arg.type.name}) does not exist`, { position });
  }

  private joinExpression(body: JoinExpr, outer: Scope | undefined, leftScope: Scope | undefined): FromItem {
    const left = this.bindItem(body.larg!, outer, leftScope);
    const right = this.bindItem(body.rarg!, outer, scopeOf(left, outer));
    const joinType: JoinType = body.jointype === 'JOIN_LEFT' ? 'left' : body.jointype === 'JOIN_RIGHT' ? 'right' : body.jointype === 'JOIN_FULL' ? 'full' : 'inner';
    let using = ((body.usingClause ?? []) as Node[]).map((n) => (n as any).String.sval as string);
    if (body.isNatural) {
      const leftNames = visibleNames(left);
      using = visibleNames(right).filter((n) => leftNames.includes(n));
    }
    const item = this.join(left, right, joinType, body.quals, undefined, outer, using);
    // `(a JOIN b) AS j`: the joined columns are reached through the alias j.
    if (body.alias !== undefined) return { plan: item.plan, relations: item.relations.map((r) => ({ ...r, alias: body.alias!.aliasname! })), merged: item.merged };
    return item;
  }

  /** Joins two items; the right one is lateral when it reads the left one's columns. */
  join(left: FromItem, right: FromItem, joinType: JoinType, quals: Node | undefined, _position: number | undefined, outer: Scope | undefined, using: readonly string[] = []): FromItem {
    const leftWidth = left.plan.columns.length;
    const shift = (r: ScopeRelation): ScopeRelation => ({ ...r, columns: r.columns.map((c) => ({ ...c, index: c.index + leftWidth })) });
    const relations = [...left.relations, ...right.relations.map(shift)];
    const shiftExpression = (e: Expression): Expression => shiftColumns(e, leftWidth);
    const merged: Scope['merged'] = [...left.merged, ...right.merged.map((m) => ({ ...m, expression: shiftExpression(m.expression) }))];
    const scope = new Scope(outer);
    scope.relations.push(...relations);
    scope.merged.push(...merged);
    // A right item bound under the left scope reads the enclosing queries at depth 2 and more: it
    // must run as a lateral join (the left row pushed) whenever it reads any outer row at all.
    const lateral =
      right.scopedUnderLeft === undefined ? planUsesOuter(right.plan, 1)
      : right.scopedUnderLeft ? usesAnyOuter(right.plan)
      : false;
    if (lateral && (joinType === 'right' || joinType === 'full')) {
      throw new SqlError(SqlState.invalidColumnReference, `the combining JOIN type must be INNER or LEFT for a LATERAL reference`);
    }
    const conditions: Expression[] = [];
    const usingMerged: Scope['merged'] = [];
    for (const name of using) {
      const l = findUnique(left, name, 'left');
      const r = findUnique(right, name, 'right');
      const leftExpression: Expression = l.expression ?? { kind: 'Column', index: l.column!.index, type: l.column!.type };
      const rightExpression: Expression = shiftExpression(r.expression ?? { kind: 'Column', index: r.column!.index, type: r.column!.type });
      const type = this.context.commonTypeOf([leftExpression.type, rightExpression.type], 'JOIN/USING', undefined);
      const a = this.context.coerce(leftExpression, type, 'implicit');
      const b = this.context.coerce(rightExpression, type, 'implicit');
      conditions.push(this.context.operator('=', a, b, undefined));
      const expression: Expression = joinType === 'right' ? b : joinType === 'full' ? { kind: 'Coalesce', args: [a, b], type } : a;
      usingMerged.push({ name, expression, type });
    }
    if (quals !== undefined) conditions.push(this.expressions.condition(quals, scope, { clause: 'JOIN conditions' }, 'JOIN/ON'));
    const condition: Expression | undefined = conditions.length === 0 ? undefined : conditions.length === 1 ? conditions[0] : { kind: 'And', args: conditions, type: scalar('bool') };
    const plan: Plan = {
      kind: 'Join',
      joinType,
      left: left.plan,
      right: right.plan,
      ...(condition === undefined ? {} : { condition }),
      lateral,
      columns: [...left.plan.columns, ...right.plan.columns],
    };
    // USING columns are merged: an unqualified reference reads the merged column (Scope.lookup
    // looks at merged columns first); each side's own column stays reachable when qualified.
    return { plan, relations, merged: [...usingMerged, ...merged.filter((m) => !using.includes(m.name))] };
  }
}

/** Deepest nesting a query can have is far below this; outer references beyond it cannot exist. */
const MAX_OUTER_DEPTH = 64;

function usesAnyOuter(plan: Plan): boolean {
  for (let depth = 1; depth <= MAX_OUTER_DEPTH; depth++) if (planUsesOuter(plan, depth)) return true;
  return false;
}

function visibleNames(item: FromItem): string[] {
  return [...item.merged.map((m) => m.name), ...item.relations.flatMap((r) => r.columns.filter((c) => !c.hidden).map((c) => c.name))];
}

function findUnique(item: FromItem, name: string, side: string): { column?: ScopeRelation['columns'][number]; expression?: Expression } {
  const merged = item.merged.find((m) => m.name === name);
  if (merged !== undefined) return { expression: merged.expression };
  const matches = item.relations.flatMap((r) => r.columns.filter((c) => c.name === name));
  if (matches.length === 0) throw new SqlError(SqlState.undefinedColumn, `column "${name}" specified in USING clause does not exist in ${side} table`);
  if (matches.length > 1) throw new SqlError(SqlState.ambiguousColumn, `common column name "${name}" appears more than once in ${side} table`);
  return { column: matches[0] };
}

export function scopeOf(item: FromItem, outer: Scope | undefined): Scope {
  const scope = new Scope(outer);
  scope.relations.push(...item.relations);
  scope.merged.push(...item.merged);
  return scope;
}

function shiftColumns(expression: Expression, by: number): Expression {
  if (expression.kind === 'Column') return { ...expression, index: expression.index + by };
  if (expression.kind === 'Coalesce') return { ...expression, args: expression.args.map((a) => shiftColumns(a, by)) };
  if (expression.kind === 'Cast') return { ...expression, input: shiftColumns(expression.input, by) };
  return expression;
}

/**
 * A sequence read as a relation (pg_dump's `SELECT last_value, is_called FROM s`): PostgreSQL's one
 * row of last_value, log_cnt and is_called, as a view over pg_sequences.
 */
function sequenceAsView(relation: RelationDef): RelationDef {
  const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;
  const definition =
    'SELECT coalesce(last_value, start_value) AS last_value, 0::int8 AS log_cnt, last_value IS NOT NULL AS is_called ' +
    `FROM pg_catalog.pg_sequences WHERE schemaname = ${literal(relation.schema)} AND sequencename = ${literal(relation.name)}`;
  const column = (name: string, typeName: 'int8' | 'bool'): RelationDef['columns'][number] => ({ name, type: scalar(typeName), nullable: false, hidden: false });
  return { ...relation, kind: 'view', definition, columns: [column('last_value', 'int8'), column('log_cnt', 'int8'), column('is_called', 'bool')] };
}


/** `PROCTIME()` (RisingWave's processing time), the moment of a temporal join's lookup. */
function isProctime(node: Node): boolean {
  const call = (node as { FuncCall?: { funcname?: { String?: { sval?: string } }[]; args?: unknown[]; agg_star?: boolean } }).FuncCall;
  if (call === undefined || call.args !== undefined || call.agg_star === true) return false;
  const names = (call.funcname ?? []).map((part) => part.String?.sval);
  return names.length === 1 ? names[0] === 'proctime' : names.length === 2 && names[0] === 'pg_catalog' && names[1] === 'proctime';
}
