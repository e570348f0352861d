// A session's preparing and planning: a statement's text parsed and classified (statement-kinds.ts),
// planned through the planner (views expanded first), eagerly for an extended-protocol Parse (to
// describe its columns) and lazily for a multi-statement string (a later statement may read a table
// an earlier one creates); a one-statement INSERT ... VALUES of literals from its cached shape
// (insert-shape-cache.ts); a Parse from the statement cache (prepared-statement-cache.ts); a
// statement re-planned when the catalog or search path changed since it was planned (`currentPlan`,
// 0A000 when a Parse's result columns would change).

import type { Node } from '@pgsql/types';
import type { ParsedStatement } from '../../sql/parser/ast.js';
import { parse } from '../../sql/parser/index.js';
import { insertValuesShape, type InsertValuesShape } from '../../sql/parser/insert-values-shape.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type, type DataType } from '../../sql/types.js';
import { planStatement, type PlannedStatement, type PlannerContext } from '../../planner/index.js';
import { expandViews } from '../catalog/view-expansion.js';
import type { ColumnDescription, PreparedStatement } from './engine.js';
import type { EngineCore } from './engine-core.js';
import { InsertShapeCache, type CachedShape } from './insert-shape-cache.js';
import { PreparedStatementCache } from './prepared-statement-cache.js';
import { declareOf, fetchColumns, type SqlCursors } from './cursors.js';
import { executeOf, type SqlPreparedStatements } from './prepared-statements-sql.js';
import { showColumns } from './settings-statements.js';
import type { ShowResult } from './show-objects.js';
import { QUERY_PLAN_COLUMNS, classify, nodeKind, sameColumns, type OxbowPrepared } from './statement-kinds.js';

/** What the session hands its statement preparer. */
export interface StatementPreparerHost {
  readonly core: EngineCore;
  readonly cursors: SqlCursors;
  readonly sqlPrepared: SqlPreparedStatements<OxbowPrepared>;
  plannerContext(parameterTypes: readonly (DataType | undefined)[]): PlannerContext;
  /** The search path and its cache key, parsed once per search_path text. */
  currentSearchPath(): { readonly path: readonly string[]; readonly key: string };
  /** SHOW TABLES / DESCRIBE / SHOW CREATE's result (its columns for a Parse). */
  show(parsed: ParsedStatement): ShowResult;
}

export class StatementPreparer {
  /** Plans of INSERT ... VALUES statements by shape (texts that differ only in literals). */
  readonly insertShapes = new InsertShapeCache();
  /** Extended-protocol statements by text and declared types (a Parse of the same text reuses its parse and plan). */
  readonly preparedStatements = new PreparedStatementCache<OxbowPrepared>();

  constructor(private readonly host: StatementPreparerHost) {}

  prepareMany(sql: string): PreparedStatement[] {
    const shape = insertValuesShape(sql);
    if (shape !== undefined) {
      const prepared = this.shapePrepared(sql, shape);
      if (prepared !== undefined) return [prepared];
    }
    return parse(sql).map((statement) => this.prepared(sql, statement, [], false));
  }

  /**
   * A one-statement INSERT ... VALUES of literals, prepared from its cached shape (parsed once per
   * shape); undefined when the parameterized text does not parse (the ordinary path then reports
   * what the statement's own text gets).
   */
  private shapePrepared(sql: string, shape: InsertValuesShape): OxbowPrepared | undefined {
    let cached = this.insertShapes.get(shape.key);
    if (cached === undefined) {
      let statements: ParsedStatement[];
      try {
        statements = parse(shape.parameterizedText);
      } catch {
        return undefined;
      }
      if (statements.length !== 1 || nodeKind(statements[0]!) !== 'InsertStmt') return undefined;
      cached = this.insertShapes.add(shape.key, statements[0]!, shape.literals);
    }
    const text = sql.trim().replace(/;$/, '').trimEnd();
    return {
      sql,
      parsed: { node: cached.parsed.node, text, location: sql.indexOf(text) },
      utility: { kind: 'planned' },
      declaredParameterTypes: cached.declaredParameterTypes,
      parameterTypes: [],
      columns: null,
      shape: { cached, literals: shape.literals },
    };
  }

  /** The statement prepared the ordinary way (its own text parsed and planned). */
  ordinaryPrepared(statement: OxbowPrepared): OxbowPrepared {
    const [parsed] = parse(statement.sql);
    return this.prepared(statement.sql, parsed!, [], false);
  }

  prepare(sql: string, parameterTypes: readonly (DataType | undefined)[]): PreparedStatement {
    const catalog = this.host.core.catalog.snapshot;
    const searchPath = this.host.currentSearchPath().key;
    const cached = this.preparedStatements.get(sql, parameterTypes, catalog, searchPath);
    if (cached !== undefined) return cached;
    const statements = parse(sql);
    if (statements.length > 1) {
      throw new SqlError(SqlState.syntaxError, 'cannot insert multiple commands into a prepared statement');
    }
    if (statements.length === 0) {
      // An empty query string (extended protocol): EmptyQueryResponse when executed.
      const empty: OxbowPrepared = { sql, parameterTypes: [], columns: null, parsed: { node: {} as Node, text: '', location: 0 }, utility: { kind: 'empty' }, declaredParameterTypes: [] };
      return empty;
    }
    const prepared = this.prepared(sql, statements[0]!, parameterTypes, true);
    if (prepared.utility.kind === 'planned') this.preparedStatements.add(sql, parameterTypes, catalog, searchPath, prepared);
    return prepared;
  }

  prepared(sql: string, parsed: ParsedStatement, declared: readonly (DataType | undefined)[], eager: boolean): OxbowPrepared {
    const utility = classify(parsed);
    const statement: OxbowPrepared = {
      sql,
      parsed,
      utility,
      declaredParameterTypes: declared,
      parameterTypes: declared.map((parameterType) => parameterType ?? type('text')),
      columns: utility.kind === 'setting' ? showColumns(parsed.node as Node) : utility.kind === 'explainView' ? QUERY_PLAN_COLUMNS : null,
    };
    if (eager && utility.kind === 'show') return { ...statement, columns: this.host.show(parsed).columns };
    if (utility.kind === 'sqlPrepared' || utility.kind === 'cursor') return { ...statement, ...this.sqlStatementShape(parsed, declared, eager) };
    if (eager && utility.kind === 'planned') {
      const planned = this.plan(statement);
      return { ...statement, parameterTypes: planned.parameterTypes, columns: planned.columns, plan: { planned, catalog: this.host.core.catalog.snapshot, searchPath: this.host.currentSearchPath().key }, fixedResult: true };
    }
    return statement;
  }

  /** EXECUTE's and FETCH's result columns (known once PREPARE and DECLARE ran); DECLARE's parameter types when prepared by Parse. */
  private sqlStatementShape(parsed: ParsedStatement, declared: readonly (DataType | undefined)[], eager: boolean): { columns: readonly ColumnDescription[] | null; parameterTypes?: readonly DataType[] } {
    const node = parsed.node as Node;
    if ('ExecuteStmt' in node) return { columns: this.host.sqlPrepared.peek(executeOf(node).name)?.columns ?? null };
    if (!('DeclareCursorStmt' in node) || !eager) return { columns: fetchColumns(node, this.host.cursors) };
    const planned = this.planParsed({ node: declareOf(node).query, text: parsed.text, location: parsed.location }, declared);
    return { columns: null, parameterTypes: planned.parameterTypes };
  }

  private plan(statement: OxbowPrepared): PlannedStatement {
    return this.planParsed(statement.parsed, statement.declaredParameterTypes);
  }

  /** Plans a parsed statement, views expanded first (view-expansion.ts). */
  planParsed(parsed: ParsedStatement, parameterTypes: readonly (DataType | undefined)[]): PlannedStatement {
    const searchPath = [...this.host.currentSearchPath().path];
    return planStatement(expandViews(parsed, this.host.core.catalog, searchPath), this.host.plannerContext(parameterTypes));
  }

  /**
   * The statement's plan against the current catalog and search path: re-planned when either
   * changed since it was planned (a table dropped and created again, a column added, SET
   * search_path), as PostgreSQL's plan cache re-plans.
   */
  currentPlan(statement: OxbowPrepared): PlannedStatement {
    const catalog = this.host.core.catalog.snapshot;
    const searchPath = this.host.currentSearchPath().key;
    const plan = statement.plan;
    if (plan !== undefined && plan.catalog === catalog && plan.searchPath === searchPath) return plan.planned;
    if (statement.fixedResult !== true) {
      statement.plan = { planned: this.plan(statement), catalog, searchPath };
      return statement.plan.planned;
    }
    // A Parse's parameter types stay as the client was told (PostgreSQL fixes them at Parse).
    const planned = this.planParsed(statement.parsed, statement.parameterTypes);
    if (!sameColumns(planned.columns, statement.columns)) {
      // The routine PostgreSQL names: postgres.js then prepares the statement again and retries.
      throw new SqlError(SqlState.featureNotSupported, 'cached plan must not change result type', { routine: 'RevalidateCachedQuery' });
    }
    // Same names and types; the table OIDs may be new (a table created again).
    (statement as { columns: readonly ColumnDescription[] | null }).columns = planned.columns;
    statement.plan = { planned, catalog, searchPath };
    return planned;
  }

  /** Bind and Describe of a prepared statement: its plan brought up to date (0A000 if its result would change). */
  revalidate(prepared: PreparedStatement): void {
    const statement = prepared as OxbowPrepared;
    if (statement.utility.kind === 'planned' && statement.shape === undefined && statement.fixedResult === true) this.currentPlan(statement);
  }

  /** A cached shape's plan against the current catalog and search path. */
  shapePlan(cached: CachedShape): PlannedStatement {
    const catalog = this.host.core.catalog.snapshot;
    const { path: searchPath, key: searchPathKey } = this.host.currentSearchPath();
    if (cached.plan === undefined || cached.plan.catalog !== catalog || cached.plan.searchPath !== searchPathKey) {
      const planned = planStatement(expandViews(cached.parsed, this.host.core.catalog, searchPath), this.host.plannerContext(cached.declaredParameterTypes));
      cached.plan = { planned, catalog, searchPath: searchPathKey };
      this.insertShapes.counts.planned++;
    }
    return cached.plan.planned;
  }}
