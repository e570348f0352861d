// StreamValues (linear): constant rows (VALUES, a table function without a table), inserted once
// when the view is created; they never change afterwards.

import type { StreamPlan } from '../../planner/stream/stream-plan.js';
import { collect } from '../batch/operator.js';
import { emptyChanges, withSign, type ChangeBatch } from './change-batch.js';
import type { StreamContext } from './stream-context.js';
import type { StreamNode } from './stream-node.js';

export class StreamValuesNode implements StreamNode {
  constructor(
    private readonly plan: Extract<StreamPlan, { kind: 'StreamValues' }>,
    private readonly context: StreamContext,
  ) {}

  apply(): ChangeBatch {
    return emptyChanges();
  }

  initial(): ChangeBatch {
    return withSign(collect(this.plan.plan, this.context.setTemplateInputs([])), 1);
  }
}
