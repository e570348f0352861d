// INSERT: reads every input row first, checks NOT NULL and the primary key (against stored rows
// and the statement's own earlier rows), resolves ON CONFLICT, and only then writes, so a failing
// statement writes nothing. Yields the RETURNING rows (or nothing); the row count goes to the
// command tag through runtime-independent state (see run.ts).

import type { Row } from '../../sql/value.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { PlanOf } from '../../planner/plan.js';
import type { Batches, Runtime } from './runtime.js';
import { compile, compilePredicate } from '../expr/expression.js';
import { gather } from './operator.js';
import { KeyMap } from '../expr/row-hash.js';
import { checkNotNull, duplicateKeyError, fillRowId, primaryKeyOf } from './constraints.js';
import { recordAffected } from './affected.js';

export function* insert(plan: PlanOf<'Insert'>, runtime: Runtime): Batches {
  const relation = plan.relation;
  const keyTypes = relation.primaryKey.map((i) => relation.columns[i]!.type);
  const written = new KeyMap<{ row: Row; fromThisStatement: boolean }>(keyTypes);
  const conflict = plan.onConflict;
  const assignments = conflict?.assignments.map((a) => ({ column: a.column, value: compile(a.value) })) ?? [];
  const where = conflict?.where === undefined ? undefined : compilePredicate(conflict.where);
  const deletes: Row[] = [];
  const results: Row[] = [];
  for (const input of yield* gather(plan.input, runtime)) {
    const row = [...input];
    fillRowId(relation, row, runtime);
    checkNotNull(relation, row, runtime);
    const key = primaryKeyOf(relation, row);
    const index = written.indexOf(key);
    const existing = index >= 0 ? written.values[index]!.row : runtime.tables.get(relation, key);
    if (existing === undefined) {
      if (index >= 0) written.values[index] = { row, fromThisStatement: true };
      else written.add(key, { row, fromThisStatement: true });
      results.push(row);
      continue;
    }
    if (conflict === undefined) throw duplicateKeyError(relation, row, runtime);
    if (conflict.action === 'nothing') continue;
    if (index >= 0 && written.values[index]!.fromThisStatement) {
      throw new SqlError(SqlState.cardinalityViolation, 'ON CONFLICT DO UPDATE command cannot affect row a second time', {
        hint: 'Ensure that no rows proposed for insertion within the same command have duplicate constrained values.',
      });
    }
    const combined = [...existing, ...row];
    if (where !== undefined && !where(combined, runtime)) continue;
    const updated = [...existing];
    for (const a of assignments) updated[a.column] = a.value(combined, runtime);
    checkNotNull(relation, updated, runtime);
    const updatedKey = primaryKeyOf(relation, updated);
    if (written.indexOf(updatedKey) < 0 && index < 0) {
      // The key may have changed: the old row goes, the new key must be free.
      const sameKey = updatedKey.every((v, i) => v === key[i]);
      if (!sameKey) {
        if (runtime.tables.get(relation, updatedKey) !== undefined) throw duplicateKeyError(relation, updated, runtime);
        deletes.push(existing);
      }
    }
    if (index >= 0) written.values[index] = { row: updated, fromThisStatement: true };
    else written.add(key, { row: updated, fromThisStatement: true });
    results.push(updated);
  }
  for (const row of deletes) runtime.tables.delete(relation, row);
  for (const entry of written.values) runtime.tables.insert(relation, entry.row);
  recordAffected(runtime, results.length);
  if (plan.returning !== undefined) {
    const evaluators = plan.returning.map(compile);
    yield results.map((row) => evaluators.map((evaluate) => evaluate(row, runtime)));
  }
}
