// INSERT, UPDATE and DELETE to plans. The input plan of each produces rows in the target's full
// column order (INSERT: values with defaults filled and assignment casts applied; UPDATE and
// DELETE: the current row first, then any FROM / USING columns); constraint checks and writes are
// the executor's. RETURNING lists are bound over the target's full row.

import type { Node, InsertStmt, UpdateStmt, DeleteStmt, ResTarget } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import { columnDefaultSql, type RelationDef } from '../../sql/catalog.js';
import { parseExpression } from '../../sql/parser/index.js';
import type { Expression } from '../expression.js';
import type { OnConflict, OutputColumn, Plan } from '../plan.js';
import { type BinderContext, positionOf } from './context.js';
import { figureName, type SelectBinder } from './select.js';
import { Scope, type ScopeRelation } from './scope.js';

function targetRelation(context: BinderContext, node: any, verb: string): RelationDef {
  const position = positionOf(node.location);
  const relation = context.planner.catalog.resolveRelation(node.schemaname, node.relname, context.planner.searchPath);
  if (relation === undefined) {
    const shown = node.schemaname === undefined ? node.relname : `${node.schemaname}.${node.relname}`;
    throw new SqlError(SqlState.undefinedTable, `relation "${shown}" does not exist`, { position });
  }
  if (relation.kind !== 'table') {
    const what = relation.kind === 'materialized_view' ? 'materialized view' : relation.kind === 'system' ? 'system table' : relation.kind;
    throw new SqlError(SqlState.wrongObjectType, `cannot ${verb} ${what} "${relation.name}"`, { position });
  }
  return relation;
}

function relationScope(relation: RelationDef, alias: string, offset: number, schema?: string): ScopeRelation {
  return {
    alias,
    ...(schema === undefined ? {} : { schema }),
    columns: relation.columns.map((c, i) => ({ name: c.name, type: c.type, hidden: c.hidden, tableOid: relation.id, columnNumber: i + 1, index: offset + i })),
  };
}

function scanOf(relation: RelationDef): Plan {
  return {
    kind: 'Scan',
    relation,
    projection: relation.columns.map((_, i) => i),
    columns: relation.columns.map((c, i) => ({ name: c.name, type: c.type, tableOid: relation.id, columnNumber: i + 1 })),
  };
}

function columnIndex(relation: RelationDef, name: string, position: number | undefined): number {
  const index = relation.columns.findIndex((c) => c.name === name && !c.hidden);
  if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${name}" of relation "${relation.name}" does not exist`, { position });
  return index;
}

export class DmlBinder {
  constructor(
    readonly context: BinderContext,
    readonly select: SelectBinder,
  ) {}

  /** The default of column `index` (NULL without one), coerced to the column type. */
  defaultValue(relation: RelationDef, index: number): Expression {
    const column = relation.columns[index]!;
    const defaultSql = columnDefaultSql(column);
    if (defaultSql === undefined) return { kind: 'Literal', value: null, type: column.type };
    const bound = this.select.expressions.bind(parseExpression(defaultSql), new Scope(), { clause: 'DEFAULT expressions' });
    return this.context.coerce(bound, column.type, 'assignment', undefined, `column "${column.name}"`);
  }

  private returning(list: readonly Node[] | undefined, scope: Scope): { expressions?: Expression[]; columns: OutputColumn[] | null } {
    if (list === undefined || list.length === 0) return { columns: null };
    const targets = this.select.bindTargets(list, scope, { clause: 'RETURNING' });
    return {
      expressions: targets.map((t) => (t.expression.type.name === 'unknown' ? this.context.coerce(t.expression, { name: 'text', typmod: -1 }, 'implicit') : t.expression)),
      columns: targets.map((t) => ({ name: t.name, type: t.expression.type.name === 'unknown' ? { name: 'text', typmod: -1 } : t.expression.type, tableOid: t.tableOid, columnNumber: t.columnNumber })),
    };
  }

  bindInsert(statement: InsertStmt): { plan: Plan; relation: RelationDef; columns: OutputColumn[] | null } {
    if (statement.withClause !== undefined) throw new SqlError(SqlState.featureNotSupported, 'WITH on INSERT is not supported');
    const relation = targetRelation(this.context, statement.relation, 'insert into');
    const alias = statement.relation!.alias?.aliasname ?? relation.name;
    const columnNodes = (statement.cols ?? []) as Node[];
    const targetColumns = columnNodes.length > 0
      ? columnNodes.map((n) => {
          const target = (n as any).ResTarget as ResTarget;
          if (target.indirection !== undefined) throw new SqlError(SqlState.featureNotSupported, 'INSERT into subfields or array elements is not supported', { position: positionOf(target.location) });
          return columnIndex(relation, target.name!, positionOf(target.location));
        })
      : relation.columns.flatMap((c, i) => (c.hidden ? [] : [i]));
    const seen = new Set<number>();
    columnNodes.forEach((n, i) => {
      if (seen.has(targetColumns[i]!)) throw new SqlError(SqlState.duplicateColumn, `column "${relation.columns[targetColumns[i]!]!.name}" specified more than once`, { position: positionOf((n as any).ResTarget.location) });
      seen.add(targetColumns[i]!);
    });
    const assign = (value: Expression, column: number, position: number | undefined): Expression =>
      this.context.coerce(value, relation.columns[column]!.type, 'assignment', position, `column "${relation.columns[column]!.name}"`);
    // Identity columns: OVERRIDING USER VALUE ignores the given values; a GENERATED ALWAYS one
    // takes a value only with OVERRIDING SYSTEM VALUE (428C9, as PostgreSQL says).
    const override = (statement as { override?: string }).override;
    const identityRefused = (column: number): SqlError | undefined => {
      const def = relation.columns[column]!;
      if (def.identity?.kind !== 'always' || override === 'OVERRIDING_SYSTEM_VALUE' || override === 'OVERRIDING_USER_VALUE') return undefined;
      return new SqlError(SqlState.generatedAlways, `cannot insert a non-DEFAULT value into column "${def.name}"`, {
        detail: `Column "${def.name}" is an identity column defined as GENERATED ALWAYS.`,
        hint: 'Use OVERRIDING SYSTEM VALUE to override.',
      });
    };
    const userValueIgnored = (column: number): boolean => override === 'OVERRIDING_USER_VALUE' && relation.columns[column]!.identity !== undefined;
    const fullRow = (values: ReadonlyMap<number, Expression>): Expression[] =>
      relation.columns.map((_, i) => (userValueIgnored(i) ? undefined : values.get(i)) ?? this.defaultValue(relation, i));

    let input: Plan;
    const select = (statement.selectStmt as any)?.SelectStmt;
    if (select === undefined) {
      input = { kind: 'Values', rows: [fullRow(new Map())], columns: relation.columns.map((c) => ({ name: c.name, type: c.type, tableOid: 0, columnNumber: 0 })) };
    } else if (select.valuesLists !== undefined && select.sortClause === undefined && select.limitCount === undefined && select.withClause === undefined) {
      const rows = (select.valuesLists as Node[]).map((list) => {
        const items = (list as any).List.items as Node[];
        if (items.length > targetColumns.length) throw new SqlError(SqlState.syntaxError, 'INSERT has more expressions than target columns', { position: positionOf((Object.values(items[targetColumns.length]!)[0] as { location?: number } | undefined)?.location) });
        // Without a column list, missing trailing values take their defaults (PostgreSQL).
        if (items.length < targetColumns.length && columnNodes.length > 0) throw new SqlError(SqlState.syntaxError, 'INSERT has more target columns than expressions', { position: positionOf((columnNodes[items.length] as any)?.ResTarget.location) });
        const values = new Map<number, Expression>();
        items.forEach((item, i) => {
          const column = targetColumns[i]!;
          if ('SetToDefault' in item) return;
          const refused = identityRefused(column);
          if (refused !== undefined) throw refused;
          const bound = this.select.expressions.bind(item, new Scope(), { clause: 'VALUES' });
          values.set(column, assign(bound, column, positionOf((Object.values(item)[0] as { location?: number } | undefined)?.location)));
        });
        return fullRow(values);
      });
      input = { kind: 'Values', rows, columns: relation.columns.map((c) => ({ name: c.name, type: c.type, tableOid: 0, columnNumber: 0 })) };
    } else {
      const bound = this.select.bindQuery(statement.selectStmt!, undefined, true);
      if (bound.columns.length > targetColumns.length) throw new SqlError(SqlState.syntaxError, 'INSERT has more expressions than target columns');
      if (bound.columns.length < targetColumns.length && columnNodes.length > 0) throw new SqlError(SqlState.syntaxError, 'INSERT has more target columns than expressions');
      // Typed where produced: INSERT ... SELECT 1, NULL gives the NULL the column's type.
      const query = this.select.coerceOutputs(bound, bound.columns.map((_, i) => relation.columns[targetColumns[i]!]!.type), 'assignment', (i) => `column "${relation.columns[targetColumns[i]!]!.name}"`);
      const values = new Map<number, Expression>();
      query.columns.forEach((_, i) => {
        const refused = identityRefused(targetColumns[i]!);
        if (refused !== undefined) throw refused;
      });
      query.columns.forEach((c, i) => values.set(targetColumns[i]!, { kind: 'Column', index: i, type: c.type }));
      input = { kind: 'Project', input: query, expressions: fullRow(values), columns: relation.columns.map((c) => ({ name: c.name, type: c.type, tableOid: 0, columnNumber: 0 })) };
    }

    const targetScope = new Scope();
    targetScope.relations.push(relationScope(relation, alias, 0));
    const onConflict = statement.onConflictClause === undefined ? undefined : this.onConflict(statement.onConflictClause, relation, alias);
    const returning = this.returning(statement.returningList as Node[] | undefined, targetScope);
    const plan: Plan = {
      kind: 'Insert',
      relation,
      input,
      ...(onConflict ? { onConflict } : {}),
      ...(returning.expressions ? { returning: returning.expressions } : {}),
      columns: returning.columns ?? [],
    };
    return { plan, relation, columns: returning.columns };
  }

  private onConflict(clause: any, relation: RelationDef, alias: string): OnConflict {
    const position = positionOf(clause.location);
    const inferred = ((clause.infer?.indexElems ?? []) as Node[]).map((n) => columnIndex(relation, (n as any).IndexElem.name, position));
    if (clause.infer?.conname !== undefined && clause.infer.conname !== `${relation.name}_pkey`) {
      throw new SqlError(SqlState.undefinedObject, `constraint "${clause.infer.conname}" for table "${relation.name}" does not exist`, { position });
    }
    const primaryKey = [...relation.primaryKey].sort();
    const matchesKey = inferred.length === primaryKey.length && [...inferred].sort().every((c, i) => c === primaryKey[i]);
    if (inferred.length > 0 && !matchesKey) {
      throw new SqlError(SqlState.invalidColumnReference, 'there is no unique or exclusion constraint matching the ON CONFLICT specification', { position });
    }
    if (clause.action === 'ONCONFLICT_NOTHING') return { action: 'nothing', assignments: [] };
    if (inferred.length === 0 && clause.infer?.conname === undefined) {
      throw new SqlError(SqlState.syntaxError, 'ON CONFLICT DO UPDATE requires inference specification or constraint name', { position, hint: 'For example, ON CONFLICT (column_name).' });
    }
    const scope = new Scope();
    scope.relations.push(relationScope(relation, alias, 0), relationScope(relation, 'excluded', relation.columns.length));
    const assignments = this.assignments(clause.targetList as Node[], relation, scope);
    const where = clause.whereClause === undefined ? undefined : this.select.expressions.condition(clause.whereClause, scope, { clause: 'ON CONFLICT' }, 'WHERE');
    return { action: 'update', assignments, ...(where ? { where } : {}) };
  }

  private assignments(list: readonly Node[], relation: RelationDef, scope: Scope): { column: number; value: Expression }[] {
    const result: { column: number; value: Expression }[] = [];
    for (const node of list) {
      const target = (node as any).ResTarget as ResTarget;
      const position = positionOf(target.location);
      if (target.indirection !== undefined) throw new SqlError(SqlState.featureNotSupported, 'assignment to subfields or array elements is not supported', { position });
      let source = target.val!;
      const multi = (source as any).MultiAssignRef;
      if (multi !== undefined) {
        // SET (a, b) = (x, y): each target carries the row and its position in it.
        const row = multi.source?.RowExpr;
        if (row === undefined) throw new SqlError(SqlState.featureNotSupported, 'SET (...) = (subquery) is not supported', { position });
        if ((row.args ?? []).length !== multi.ncolumns) throw new SqlError(SqlState.syntaxError, 'number of columns does not match number of values', { position });
        source = row.args[multi.colno - 1];
      }
      const column = columnIndex(relation, target.name!, position);
      if (result.some((a) => a.column === column)) throw new SqlError(SqlState.duplicateColumn, `multiple assignments to same column "${target.name}"`, { position });
      if (!('SetToDefault' in source) && relation.columns[column]!.identity?.kind === 'always') {
        throw new SqlError(SqlState.generatedAlways, `column "${target.name}" can only be updated to DEFAULT`, {
          position,
          detail: `Column "${target.name}" is an identity column defined as GENERATED ALWAYS.`,
        });
      }
      const value = 'SetToDefault' in source
        ? this.defaultValue(relation, column)
        : this.context.coerce(this.select.expressions.bind(source, scope, { clause: 'UPDATE' }), relation.columns[column]!.type, 'assignment', position, `column "${target.name}"`);
      result.push({ column, value });
    }
    return result;
  }

  /** The target scanned and joined with FROM / USING items, filtered by WHERE. */
  private targetInput(relation: RelationDef, alias: string, hasAlias: boolean, fromItems: readonly Node[], where: Node | undefined): { plan: Plan; scope: Scope } {
    let plan: Plan = scanOf(relation);
    const scope = new Scope();
    scope.relations.push(relationScope(relation, alias, 0, hasAlias ? undefined : relation.schema));
    if (fromItems.length > 0) {
      const from = this.select.from.bindFromList(fromItems, undefined);
      const width = plan.columns.length;
      for (const r of from.scope.relations) scope.relations.push({ ...r, columns: r.columns.map((c) => ({ ...c, index: c.index + width })) });
      plan = { kind: 'Join', joinType: 'inner', left: plan, right: from.plan, lateral: false, columns: [...plan.columns, ...from.plan.columns] };
    }
    if (where !== undefined) {
      const predicate = this.select.expressions.condition(where, scope, { clause: 'WHERE' }, 'WHERE');
      plan = { kind: 'Filter', input: plan, predicate, columns: plan.columns };
    }
    return { plan, scope };
  }

  bindUpdate(statement: UpdateStmt): { plan: Plan; relation: RelationDef; columns: OutputColumn[] | null } {
    if (statement.withClause !== undefined) throw new SqlError(SqlState.featureNotSupported, 'WITH on UPDATE is not supported');
    const relation = targetRelation(this.context, statement.relation, 'update');
    const alias = statement.relation!.alias?.aliasname ?? relation.name;
    const { plan: input, scope } = this.targetInput(relation, alias, statement.relation!.alias !== undefined, (statement.fromClause ?? []) as Node[], statement.whereClause);
    const assignments = this.assignments(statement.targetList as Node[], relation, scope);
    // RETURNING sees the new row and the FROM tables: the executor evaluates it over the
    // updated row followed by the input's FROM columns, the same layout as `scope`.
    const returning = this.returning(statement.returningList as Node[] | undefined, scope);
    const plan: Plan = { kind: 'Update', relation, input, assignments, ...(returning.expressions ? { returning: returning.expressions } : {}), columns: returning.columns ?? [] };
    return { plan, relation, columns: returning.columns };
  }

  bindDelete(statement: DeleteStmt): { plan: Plan; relation: RelationDef; columns: OutputColumn[] | null } {
    if (statement.withClause !== undefined) throw new SqlError(SqlState.featureNotSupported, 'WITH on DELETE is not supported');
    const relation = targetRelation(this.context, statement.relation, 'delete from');
    const alias = statement.relation!.alias?.aliasname ?? relation.name;
    const { plan: input, scope } = this.targetInput(relation, alias, statement.relation!.alias !== undefined, (statement.usingClause ?? []) as Node[], statement.whereClause);
    // RETURNING sees the deleted row and the USING tables (the input row as it was).
    const returning = this.returning(statement.returningList as Node[] | undefined, scope);
    const plan: Plan = { kind: 'Delete', relation, input, ...(returning.expressions ? { returning: returning.expressions } : {}), columns: returning.columns ?? [] };
    return { plan, relation, columns: returning.columns };
  }
}

export { figureName };
