// FOREIGN KEY constraints, enforced when a writing statement ends (PostgreSQL's NO ACTION timing:
// at the end of the statement, so a statement may insert the parent and the child in any order).
// TableAccess records the rows written to tables that have foreign keys and the rows removed or
// re-keyed from tables that foreign keys reference; before the statement commits:
//
// - a removed parent key still referenced by child rows fails with 23503 (NO ACTION, RESTRICT),
//   deletes those rows (ON DELETE CASCADE) or sets their columns to NULL (ON DELETE SET NULL);
//   cascades run until nothing more is removed;
// - every child row written (as it is at the end of the statement) whose key has no NULL (MATCH
//   SIMPLE) must find its parent row, else 23503 with PostgreSQL's message and DETAIL.
//
// Lookups read the latest state of the open epoch: the primary key or a stored unique index when
// the referenced columns are one (PostgreSQL requires one), a child's rows by a stored index on
// its columns when there is one, else by a scan of the child table.

import type { ConstraintDef, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import * as functions from '../../sql/functions.js';
import type { Row, Value } from '../../sql/value.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';

export interface ForeignKey {
  readonly child: RelationDef;
  readonly parent: RelationDef;
  readonly constraint: ConstraintDef;
}

/** The foreign keys of one catalog snapshot, by child and by parent table. */
export class ForeignKeys {
  readonly byChild = new Map<number, ForeignKey[]>();
  readonly byParent = new Map<number, ForeignKey[]>();

  constructor(catalog: CatalogSnapshot) {
    for (const child of catalog.relations()) {
      for (const constraint of child.constraints ?? []) {
        if (constraint.kind !== 'foreign_key') continue;
        const parent = catalog.relationById(constraint.references!.relationId);
        if (parent === undefined) continue;
        const key: ForeignKey = { child, parent, constraint };
        push(this.byChild, child.id, key);
        push(this.byParent, parent.id, key);
      }
    }
  }

  get empty(): boolean {
    return this.byChild.size === 0;
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

const cache = new WeakMap<CatalogSnapshot, ForeignKeys>();

/** The foreign keys of a snapshot (built once per snapshot); undefined when there are none. */
export function foreignKeysOf(catalog: CatalogSnapshot): ForeignKeys | undefined {
  let keys = cache.get(catalog);
  if (keys === undefined) cache.set(catalog, (keys = new ForeignKeys(catalog)));
  return keys.empty ? undefined : keys;
}

/** What the table access offers the check: latest-state reads and writes. */
export interface ForeignKeyAccess {
  readonly foreignKeys: ForeignKeys | undefined;
  /** Rows written to child tables, and rows removed from (or re-keyed in) parent tables, since the last check. */
  readonly foreignKeyWrites: {
    readonly written: Map<number, Row[]>;
    readonly removed: Map<number, Row[]>;
    /** Parent tables the statement wrote rows to: their removed keys were updated away (ON UPDATE applies), not deleted. */
    readonly rewritten: Set<number>;
  };
  get(relation: RelationDef, key: Row): Row | undefined;
  /** True when a row with these values in these columns exists now (open epoch included). */
  hasRowWith(relation: RelationDef, columns: readonly number[], values: readonly Value[]): boolean;
  /** The rows with these values in these columns now (open epoch included). */
  rowsWith(relation: RelationDef, columns: readonly number[], values: readonly Value[]): Row[];
  /** The rows matching any of `keys`, with the index of the key each matched (one scan for many keys). */
  rowsWithAny(relation: RelationDef, columns: readonly number[], keys: readonly (readonly Value[])[]): { row: Row; key: number }[];
  insert(relation: RelationDef, row: Row): void;
  delete(relation: RelationDef, row: Row): void;
}

function keyText(relation: RelationDef, columns: readonly number[], values: readonly Value[]): { names: string; values: string } {
  return {
    names: columns.map((column) => relation.columns[column]!.name).join(', '),
    values: values.map((value, index) => (value === null ? 'null' : functions.formatValue(value, relation.columns[columns[index]!]!.type))).join(', '),
  };
}

const MAX_CASCADE_ROUNDS = 1000;

export function verifyForeignKeys(access: ForeignKeyAccess): void {
  const keys = access.foreignKeys;
  const { written, removed, rewritten } = access.foreignKeyWrites;
  if (keys === undefined) {
    written.clear();
    removed.clear();
    rewritten.clear();
    return;
  }
  // Removed parent keys: refuse, or cascade (which may remove more).
  for (let round = 0; removed.size > 0; round++) {
    if (round > MAX_CASCADE_ROUNDS) throw new SqlError(SqlState.programLimitExceeded, 'foreign key cascades nest too deeply');
    const batch = [...removed.entries()];
    removed.clear();
    for (const [parentId, rows] of batch) {
      for (const key of keys.byParent.get(parentId) ?? []) {
        const references = key.constraint.references!;
        // The keys gone from the parent, then their children in one pass over the child table.
        const gone: Value[][] = [];
        for (const old of rows) {
          const values = references.columns.map((column) => old[column] ?? null);
          if (!values.includes(null) && !access.hasRowWith(key.parent, references.columns, values)) gone.push(values);
        }
        const children = access.rowsWithAny(key.child, key.constraint.columns, gone);
        if (children.length === 0) continue;
        // An UPDATE moves the key (ON UPDATE: NO ACTION or RESTRICT); a DELETE removes it.
        const action = rewritten.has(parentId) ? references.onUpdate : references.onDelete;
        if (action === 'c') {
          for (const { row } of children) access.delete(key.child, row);
        } else if (action === 'n') {
          for (const { row } of children) {
            const updated = row.slice();
            for (const column of key.constraint.columns) updated[column] = null;
            access.insert(key.child, updated);
          }
        } else {
          // PostgreSQL reports the first removed key that is still referenced.
          const values = gone[children.reduce((first, child) => Math.min(first, child.key), Number.MAX_SAFE_INTEGER)]!;
          const text = keyText(key.parent, references.columns, values);
          throw new SqlError(SqlState.foreignKeyViolation, `update or delete on table "${key.parent.name}" violates foreign key constraint "${key.constraint.name}" on table "${key.child.name}"`, {
            detail: `Key (${text.names})=(${text.values}) is still referenced from table "${key.child.name}".`,
          });
        }
      }
    }
  }
  // Child rows written: each non-NULL key must have its parent row.
  for (const [childId, rows] of written) {
    for (const key of keys.byChild.get(childId) ?? []) {
      const references = key.constraint.references!;
      for (const row of rows) {
        const current = access.get(key.child, key.child.primaryKey.map((index) => row[index]!));
        if (current === undefined) continue;
        const values = key.constraint.columns.map((column) => current[column] ?? null);
        if (values.includes(null) || access.hasRowWith(key.parent, references.columns, values)) continue;
        const text = keyText(key.child, key.constraint.columns, values);
        throw new SqlError(SqlState.foreignKeyViolation, `insert or update on table "${key.child.name}" violates foreign key constraint "${key.constraint.name}"`, {
          detail: `Key (${text.names})=(${text.values}) is not present in table "${key.parent.name}".`,
        });
      }
    }
  }
  written.clear();
  rewritten.clear();
}
