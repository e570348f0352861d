// Rule index_lookup: a scan of a table whose pushed filter pins every primary-key column to a
// constant (`id = 42`, `a = $1 AND b = 'x'`, `id IN (1, 2, 3)`, which binds as an OR of
// equalities) gets a `lookup`: the key tuples to fetch by point reads instead of reading the whole
// table. The filter stays on the scan (it is checked on the fetched rows, and it alone keeps the
// answer right wherever a lookup cannot be used). Key expressions are literals and parameters
// (casts of them too), evaluated once per execution; the executor converts integer keys to the
// column's type and drops keys that cannot match (NULL, out of range).
//
// Without a primary-key lookup, a secondary index (CREATE INDEX, executor/catalog/secondary-index.ts)
// whose leading columns the filter pins gets an `indexLookup`: the prefix tuples to range-read in
// the index, whose entries end with the primary key the rows are then fetched by.

import type { RelationDef } from '../../sql/catalog.js';
import type { DataType } from '../../sql/types.js';
import type { CatalogReader } from '../catalog-reader.js';
import { type Expression, conjuncts } from '../expression.js';
import type { Plan, PlanOf } from '../plan.js';
import { transformPlan } from '../walk.js';

const INTEGERS = new Set(['int2', 'int4', 'int8']);
const STRINGS = new Set(['text', 'varchar', 'bpchar', 'name']);
/** Types whose `=` is identity of the stored key (no -0/NaN, no scale, no collation). */
const EXACT = new Set(['int2', 'int4', 'int8', 'text', 'varchar', 'bool', 'date', 'timestamp', 'timestamptz', 'uuid', 'oid']);

/** True when `=` between a value of `from` and a key column of type `to` is equality of the stored key. */
function keyCompatible(from: DataType, to: DataType): boolean {
  if (!EXACT.has(to.name)) return false;
  if (from.name === to.name) return true;
  if (INTEGERS.has(from.name) && INTEGERS.has(to.name)) return true;
  return STRINGS.has(from.name) && STRINGS.has(to.name) && to.name !== 'bpchar' && from.name !== 'bpchar';
}

/** Literals, parameters and casts of them: known before the scan starts. */
function isConstant(e: Expression): boolean {
  if (e.kind === 'Literal' || e.kind === 'Parameter') return true;
  return e.kind === 'Cast' && isConstant(e.input);
}

/** `column = constant` (either side): the relation column and the constant. */
function pinned(e: Expression, projection: readonly number[]): { column: number; value: Expression } | undefined {
  if (e.kind !== 'Call' || e.operator !== '=' || e.args.length !== 2) return undefined;
  const [left, right] = e.args as [Expression, Expression];
  const [col, value] = left.kind === 'Column' ? [left, right] : right.kind === 'Column' ? [right, left] : [undefined, undefined];
  if (col === undefined || col.kind !== 'Column' || !isConstant(value!)) return undefined;
  const relationColumn = projection[col.index];
  if (relationColumn === undefined) return undefined;
  return { column: relationColumn, value: value! };
}

/** The tuples of `key` columns an expression pins, or undefined when it does not pin them all. */
function keysOf(e: Expression, scan: PlanOf<'Scan'>, key: readonly number[]): Expression[][] | undefined {
  if (e.kind === 'Or') {
    const all: Expression[][] = [];
    for (const arg of e.args) {
      const keys = keysOf(arg, scan, key);
      if (keys === undefined) return undefined;
      all.push(...keys);
    }
    return all;
  }
  const relation = scan.relation;
  const parts = conjuncts(e);
  const values = new Map<number, Expression>();
  for (const part of parts) {
    const pin = pinned(part, scan.projection);
    if (pin === undefined || values.has(pin.column)) continue;
    if (!keyCompatible(pin.value.type, relation.columns[pin.column]!.type)) continue;
    values.set(pin.column, pin.value);
  }
  if (key.every((column) => values.has(column))) return [key.map((column) => values.get(column)!)];
  // A conjunct that is itself an OR of full keys (`id IN (...) AND v > 0`).
  for (const part of parts) {
    if (part.kind !== 'Or') continue;
    const keys = keysOf(part, scan, key);
    if (keys !== undefined) return keys;
  }
  return undefined;
}

/** At most this many key tuples; a longer IN list reads the table instead. */
const MAX_KEYS = 10_000;

export function chooseIndexLookups(plan: Plan, catalog?: CatalogReader): Plan {
  return transformPlan(plan, (node) => {
    if (node.kind !== 'Scan' || node.filter === undefined || node.lookup !== undefined || node.indexLookup !== undefined) return node;
    if ((node.relation.kind !== 'table' && node.relation.kind !== 'materialized_view') || node.systemTime?.kind === 'between' || node.relation.primaryKey.length === 0) return node;
    // A table without a primary key is keyed by its hidden row id, which no filter names; so is a
    // materialized view stored by its whole row and duplicate number, or by a source row id (its
    // key has the hidden column): only their indexes help. A view stored by its key is read by it.
    if (!node.relation.primaryKey.some((column) => node.relation.columns[column]!.hidden === true)) {
      const keys = keysOf(node.filter, node, node.relation.primaryKey);
      if (keys !== undefined && keys.length > 0 && keys.length <= MAX_KEYS) return { ...node, lookup: keys };
    }
    return chooseSecondaryIndex(node, catalog);
  });
}

/**
 * A secondary index whose leading columns the filter pins (the longest such prefix, over all
 * indexes; the first index in catalog order on a tie): read the index entries of each prefix,
 * then the rows by primary key.
 */
function chooseSecondaryIndex(node: PlanOf<'Scan'>, catalog: CatalogReader | undefined): Plan {
  const indexes = catalog?.indexesOf?.(node.relation.id) ?? [];
  let best: { index: RelationDef; keys: Expression[][] } | undefined;
  for (const index of indexes) {
    const columns = index.indexOn!.columns;
    for (let n = columns.length; n > (best?.keys[0]!.length ?? 0); n--) {
      const keys = keysOf(node.filter!, node, columns.slice(0, n));
      if (keys === undefined || keys.length === 0 || keys.length > MAX_KEYS) continue;
      best = { index, keys };
      break;
    }
  }
  return best === undefined ? node : { ...node, indexLookup: best };
}
