// The one walk over a parse tree that the extension layer's passes share: every property of every
// object under a root, iteratively (a long expression such as `1 + 1 + ... + 1` nests thousands of
// levels deep, too deep for recursion).

/**
 * Calls `visit(record, key, value)` for every property of every object under `root` (arrays are
 * walked through, not visited). `visit` may replace `record[key]`; the walk goes on into the value
 * it was called with.
 */
export function forEachProperty(root: unknown, visit: (record: Record<string, unknown>, key: string, value: unknown) => void): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const current = stack.pop();
    if (current === null || typeof current !== 'object') continue;
    if (Array.isArray(current)) {
      for (const item of current) if (item !== null && typeof item === 'object') stack.push(item);
      continue;
    }
    const record = current as Record<string, unknown>;
    for (const key in record) {
      const value = record[key];
      visit(record, key, value);
      if (value !== null && typeof value === 'object') stack.push(value);
    }
  }
}
