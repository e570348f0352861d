// A structural key for bound expressions, so GROUP BY / ORDER BY / DISTINCT ON expressions can be
// matched against select-list expressions the way PostgreSQL's equal() does.

import type { Expression } from '../expression.js';

let subqueryCounter = 0;
const subqueryIds = new WeakMap<object, number>();

export function expressionKey(expression: Expression): string {
  return JSON.stringify(expression, (key, value: unknown) => {
    if (typeof value === 'bigint') return `${value}n`;
    if (key === 'fn' && value !== null && typeof value === 'object') {
      const fn = value as { name: string; oid: number; argumentTypes: readonly { name: string }[] };
      return `${fn.name}/${fn.oid}/${fn.argumentTypes.map((t) => t.name).join(',')}`;
    }
    if (key === 'equals' || key === 'compare') {
      const fn = value as { name: string; oid: number };
      return `${fn.name}/${fn.oid}`;
    }
    if (key === 'impl' || key === 'position') return undefined;
    if (key === 'plan' && value !== null && typeof value === 'object') {
      let id = subqueryIds.get(value);
      if (id === undefined) {
        id = ++subqueryCounter;
        subqueryIds.set(value, id);
      }
      return `subquery#${id}`;
    }
    return value;
  });
}
