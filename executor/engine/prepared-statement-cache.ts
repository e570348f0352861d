// A session's cache of extended-protocol statements by text: a Parse message whose query text and
// declared parameter types equal an earlier one's gets the statement that Parse prepared (parsed,
// classified and planned), as long as the catalog and the search path are the ones it was planned
// against. Drivers that send every parameterized query as an unnamed statement (node-postgres'
// `client.query(text, values)`: Parse, Bind, Describe, Execute, Sync each time) otherwise pay the
// grammar and the planner on every execution, about 0.2 ms of a one-row INSERT (BENCHMARKS.md,
// "One-row INSERT to visible under a view").
//
// Exactness: a statement is a pure function of its text, the declared types, the catalog snapshot
// and the search path (the planner reads nothing else; the session's other settings are read when
// the statement runs), so the statement returned is the one a new Parse would make. Only planned
// statements (queries and DML) are kept; a Parse that fails is not kept, so its error is raised
// again. A kept statement may be shared by several names (and the unnamed one): the session keeps
// nothing per name in it.

import type { DataType } from '../../sql/types.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';

/** Statements kept per session (least recently used dropped first). */
const MAX_STATEMENTS = 64;
/** Longer texts are not kept (their parse is not what a one-row statement pays). */
const MAX_TEXT_LENGTH = 4096;

interface Entry<S> {
  readonly statement: S;
  readonly catalog: CatalogSnapshot;
  readonly searchPath: string;
}

export class PreparedStatementCache<S> {
  private readonly entries = new Map<string, Entry<S>>();
  /** What the cache did (tests read them): statements reused, statements kept. */
  readonly counts = { hits: 0, added: 0 };

  /** The statement prepared from this text and these types against this catalog and search path. */
  get(sql: string, declared: readonly (DataType | undefined)[], catalog: CatalogSnapshot, searchPath: string): S | undefined {
    if (sql.length > MAX_TEXT_LENGTH) return undefined;
    const key = cacheKey(sql, declared);
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.catalog !== catalog || entry.searchPath !== searchPath) {
      this.entries.delete(key);
      return undefined;
    }
    this.counts.hits++;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.statement;
  }

  add(sql: string, declared: readonly (DataType | undefined)[], catalog: CatalogSnapshot, searchPath: string, statement: S): void {
    if (sql.length > MAX_TEXT_LENGTH) return;
    const key = cacheKey(sql, declared);
    this.entries.delete(key);
    if (this.entries.size >= MAX_STATEMENTS) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { statement, catalog, searchPath });
    this.counts.added++;
  }

  get size(): number {
    return this.entries.size;
  }
}

function cacheKey(sql: string, declared: readonly (DataType | undefined)[]): string {
  if (declared.length === 0) return `\0${sql}`;
  let types = '';
  for (const declaredType of declared) types += `${declaredType === undefined ? '' : typeKey(declaredType)},`;
  return `${types}\0${sql}`;
}

function typeKey(declaredType: DataType): string {
  const element = declaredType.element === undefined ? '' : `[${typeKey(declaredType.element)}]`;
  return `${declaredType.name}(${declaredType.typmod})${element}`;
}
