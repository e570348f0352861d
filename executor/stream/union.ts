// StreamUnion (linear): UNION ALL passes every input's changes through unchanged.

import { emptyChanges, type ChangeBatch } from './change-batch.js';
import type { StreamNode } from './stream-node.js';

export class StreamUnionNode implements StreamNode {
  apply(_slot: number, changes: ChangeBatch): ChangeBatch {
    return changes;
  }

  initial(): ChangeBatch {
    return emptyChanges();
  }
}
