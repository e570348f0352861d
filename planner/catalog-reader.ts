// What the binder needs to know about the catalog: name resolution by schema and search path.
// Owned by the planner (its consumer); the executor's catalog implements it, and tests may use
// a small in-memory one.

import type { FunctionDef, RelationDef, SchemaDef } from '../sql/catalog.js';

export interface CatalogReader {
  /**
   * The relation named `name` in `schema`, or, when schema is undefined, in the first schema of
   * `searchPath` (pg_catalog is searched first when it is not listed, as in PostgreSQL).
   */
  resolveRelation(schema: string | undefined, name: string, searchPath: readonly string[]): RelationDef | undefined;
  relationById(id: number): RelationDef | undefined;
  schema(name: string): SchemaDef | undefined;
  /** Secondary indexes (CREATE INDEX, not the primary key's) on a relation: rules/index-lookup.ts. */
  indexesOf?(relationId: number): readonly RelationDef[];
  /**
   * SQL functions named `name` in `schema`, or in the search path's schemas (nearest first):
   * binder/sql-function.ts inlines their calls. Absent: no SQL functions.
   */
  resolveFunctions?(schema: string | undefined, name: string, searchPath: readonly string[]): readonly FunctionDef[];
}
