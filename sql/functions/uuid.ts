// gen_random_uuid() (a version 4 uuid; volatile, so every call and row gets its own). The uuid
// type itself (input, output, order, keys) is sql/uuid.ts; its comparisons are in operators.ts.

import { randomUuid } from '../uuid.js';
import { defineFunction } from './registry.js';

defineFunction('gen_random_uuid', { args: [], returns: 'uuid', volatility: 'volatile', impl: () => randomUuid() });
