// UPDATE: reads every matching row first (a row joined to several FROM rows is updated once, with
// the first match, as PostgreSQL does), computes the new rows, checks NOT NULL and, when the
// primary key changes, that the new key is free; then deletes moved keys and writes new rows.

import type { Row } from '../../sql/value.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { compile } from '../expr/expression.js';
import { gather } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';
import { checkNotNull, duplicateKeyError, primaryKeyOf } from './constraints.js';
import { recordAffected } from './affected.js';

export function* update(plan: PlanOf<'Update'>, runtime: Runtime): Batches {
  const relation = plan.relation;
  const width = relation.columns.length;
  const keyTypes = relation.primaryKey.map((i) => relation.columns[i]!.type);
  const assignments = plan.assignments.map((a) => ({ column: a.column, value: compile(a.value) }));
  const seen = new KeyMap<true>(keyTypes);
  const changes: { old: Row; updated: Row; input: Row }[] = [];
  for (const input of yield* gather(plan.input, runtime)) {
    const old = input.slice(0, width);
    const key = primaryKeyOf(relation, old);
    if (seen.indexOf(key) >= 0) continue;
    seen.add(key, true);
    const updated = [...old];
    for (const a of assignments) updated[a.column] = a.value(input, runtime);
    checkNotNull(relation, updated, runtime);
    changes.push({ old, updated, input });
  }
  // Keys after the statement: moved rows must not collide with each other or with untouched rows.
  const finalKeys = new KeyMap<true>(keyTypes);
  for (const { old, updated } of changes) {
    const newKey = primaryKeyOf(relation, updated);
    if (finalKeys.indexOf(newKey) >= 0) throw duplicateKeyError(relation, updated, runtime);
    finalKeys.add(newKey, true);
    const moved = relation.primaryKey.some((i) => old[i] !== updated[i]);
    if (moved && seen.indexOf(newKey) < 0 && runtime.tables.get(relation, newKey) !== undefined) throw duplicateKeyError(relation, updated, runtime);
  }
  for (const { old, updated } of changes) {
    if (relation.primaryKey.some((i) => old[i] !== updated[i]) && finalKeys.indexOf(primaryKeyOf(relation, old)) < 0) runtime.tables.delete(relation, old);
  }
  for (const { updated } of changes) runtime.tables.insert(relation, updated);
  recordAffected(runtime, changes.length);
  if (plan.returning !== undefined) {
    const evaluators = plan.returning.map(compile);
    // RETURNING reads the new row, then the FROM columns of the row it was joined with.
    yield changes.map(({ updated, input }) => {
      const row = input.length === width ? updated : [...updated, ...input.slice(width)];
      return evaluators.map((evaluate) => evaluate(row, runtime));
    });
  }
}
