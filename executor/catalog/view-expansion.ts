// Views are expanded before planning: every FROM-clause reference to a view becomes a subquery of
// the view's stored definition text, parsed again, with the view's name (or the reference's alias)
// and column names as its alias. Nested views expand recursively. A `FOR SYSTEM_TIME` clause on
// the view reference moves to every table reference inside it, so `AS OF` reads the view as of
// that time. The planner then binds the result like any subquery.
//
// Definitions were checked when the view was created; their text positions are relative to the
// definition, so an error inside one (a column dropped since) is reported without a position.

import type { Node } from '@pgsql/types';
import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { parse } from '../../sql/parser/index.js';
import type { ParsedStatement } from '../../sql/parser/ast.js';
import type { CatalogReader } from '../../planner/catalog-reader.js';

const MAX_VIEW_DEPTH = 32;

interface RangeVarShape {
  schemaname?: string;
  relname?: string;
  alias?: { aliasname?: string; colnames?: Node[] };
  oxbowSystemTime?: unknown;
  location?: number;
}

const definitionCache = new Map<string, Node>();

function definitionNode(view: RelationDef): Node {
  const key = `${view.id}\0${view.definition ?? ''}`;
  let node = definitionCache.get(key);
  if (node === undefined) {
    const statements = parse(view.definition ?? '');
    if (statements.length !== 1) {
      throw new SqlError(SqlState.dataCorrupted, `the stored definition of view "${view.name}" is not one query`);
    }
    node = statements[0]!.node as Node;
    if (definitionCache.size > 1000) definitionCache.clear();
    definitionCache.set(key, node);
  }
  // Every expansion gets its own copy: the planner may annotate the tree.
  return structuredClone(node);
}

/** Puts `systemTime` on every table reference of `node` that has none (CTE references excepted). */
function withSystemTime(node: unknown, systemTime: unknown, cteNames: ReadonlySet<string>): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) withSystemTime(item, systemTime, cteNames);
    return;
  }
  const record = node as Record<string, unknown>;
  const rangeVar = record.RangeVar as RangeVarShape | undefined;
  const isCte = rangeVar?.schemaname === undefined && rangeVar?.relname !== undefined && cteNames.has(rangeVar.relname);
  if (rangeVar !== undefined && rangeVar.oxbowSystemTime === undefined && !isCte) rangeVar.oxbowSystemTime = systemTime;
  for (const child of Object.values(record)) withSystemTime(child, systemTime, cteNames);
}

function cteNamesOf(node: unknown, names = new Set<string>()): Set<string> {
  if (node === null || typeof node !== 'object') return names;
  if (Array.isArray(node)) {
    for (const item of node) cteNamesOf(item, names);
    return names;
  }
  const record = node as Record<string, unknown>;
  const cte = record.CommonTableExpr as { ctename?: string } | undefined;
  if (cte?.ctename !== undefined) names.add(cte.ctename);
  for (const child of Object.values(record)) cteNamesOf(child, names);
  return names;
}

class Expander {
  private readonly cteNames = new Set<string>();

  constructor(
    private readonly catalog: CatalogReader,
    private readonly searchPath: readonly string[],
  ) {}

  collectCteNames(node: unknown): void {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const item of node) this.collectCteNames(item);
      return;
    }
    const record = node as Record<string, unknown>;
    const cte = record.CommonTableExpr as { ctename?: string } | undefined;
    if (cte?.ctename !== undefined) this.cteNames.add(cte.ctename);
    for (const child of Object.values(record)) this.collectCteNames(child);
  }

  /** Whether any FROM item of the tree names a view (a cheap check before copying the tree). */
  mentionsView(node: unknown): boolean {
    if (node === null || typeof node !== 'object') return false;
    if (Array.isArray(node)) return node.some((item) => this.mentionsView(item));
    const record = node as Record<string, unknown>;
    const rangeVar = record.RangeVar as RangeVarShape | undefined;
    if (rangeVar !== undefined) return this.viewOf(rangeVar) !== undefined;
    for (const child of Object.values(record)) if (this.mentionsView(child)) return true;
    return false;
  }

  /** Rewrites view references in place; returns whether anything changed. */
  expand(node: unknown, depth: number): boolean {
    if (node === null || typeof node !== 'object') return false;
    let changed = false;
    if (Array.isArray(node)) {
      for (const item of node) changed = this.expand(item, depth) || changed;
      return changed;
    }
    const record = node as Record<string, unknown>;
    const rangeVar = record.RangeVar as RangeVarShape | undefined;
    if (rangeVar !== undefined) {
      const view = this.viewOf(rangeVar);
      if (view !== undefined) {
        if (depth >= MAX_VIEW_DEPTH) {
          throw new SqlError(SqlState.invalidRecursion, `infinite recursion detected in rules for relation "${view.name}"`);
        }
        const subquery = definitionNode(view);
        if (rangeVar.oxbowSystemTime !== undefined) withSystemTime(subquery, rangeVar.oxbowSystemTime, cteNamesOf(subquery));
        this.collectCteNames(subquery);
        this.expand(subquery, depth + 1);
        const columnNames = view.columns.filter((column) => !column.hidden).map((column) => ({ String: { sval: column.name } }));
        delete record.RangeVar;
        record.RangeSubselect = {
          lateral: false,
          subquery,
          // The view's columns describe themselves as the view's (RowDescription's table OID and
          // column number), as PostgreSQL's do.
          oxbowViewId: view.id,
          alias: {
            aliasname: rangeVar.alias?.aliasname ?? view.name,
            colnames: rangeVar.alias?.colnames ?? columnNames,
          },
        };
        return true;
      }
      return false;
    }
    for (const child of Object.values(record)) changed = this.expand(child, depth) || changed;
    return changed;
  }

  private viewOf(rangeVar: RangeVarShape): RelationDef | undefined {
    if (rangeVar.relname === undefined) return undefined;
    if (rangeVar.schemaname === undefined && this.cteNames.has(rangeVar.relname)) return undefined;
    const relation = this.catalog.resolveRelation(rangeVar.schemaname, rangeVar.relname, this.searchPath);
    return relation?.kind === 'view' && relation.definition !== undefined ? relation : undefined;
  }
}

/** The statement with its view references expanded (the same object when it has none). */
export function expandViews(statement: ParsedStatement, catalog: CatalogReader, searchPath: readonly string[]): ParsedStatement {
  const expander = new Expander(catalog, searchPath);
  expander.collectCteNames(statement.node);
  if (!expander.mentionsView(statement.node)) return statement;
  const copy = structuredClone(statement.node);
  // INSERT/UPDATE/DELETE targets are plain RangeVar fields, not FROM items, so they stay as written.
  if (!expander.expand(copy, 0)) return statement;
  return { ...statement, node: copy };
}
