// StreamFilter (linear): keeps the changes whose row passes the predicate, sign unchanged. A
// predicate that fails on a row (division by zero) counts as not passing; the error is recorded
// for the view, never thrown. Row ids (`ChangeBatch.ids`) follow their rows.

import type { Value } from '../../sql/value.js';
import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { compile, type Evaluator } from '../expr/expression.js';
import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamFilterNode implements StreamNode {
  private readonly evaluate: Evaluator;

  constructor(plan: Extract<StreamPlan, { kind: 'StreamFilter' }>, private readonly context: StreamContext) {
    this.evaluate = compile(plan.predicate);
  }

  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    const inIds = changes.ids;
    const ids: Value[] | undefined = inIds === undefined ? undefined : [];
    const out: ChangeBatch = ids === undefined ? emptyChanges() : { rows: [], signs: [], ids };
    const runtime = this.context.runtime;
    const evaluate = this.evaluate;
    for (let i = 0; i < changes.rows.length; i++) {
      const row = changes.rows[i]!;
      let pass: boolean;
      try {
        pass = evaluate(row, runtime) === true;
      } catch (error) {
        this.context.recordError(error);
        pass = false;
      }
      if (pass) {
        out.rows.push(row);
        out.signs.push(changes.signs[i]!);
        if (ids !== undefined) ids.push(inIds![i]!);
      }
    }
    return out;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
