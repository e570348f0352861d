// RisingWave's type name `double` (PostgreSQL spells it `double precision`). PostgreSQL's own
// grammar maps its type aliases at parse time (`int` arrives as pg_catalog.int4, `double precision`
// as pg_catalog.float8); this does the same for `double`, so RisingWave's DDL and casts mean what
// they mean there. Only a bare, unqualified `double` TypeName is touched; a column named double is
// a ColumnRef and stays as it is.

import type { Node } from './ast.js';
import { isWord, type Token } from './tokenizer.js';
import { forEachProperty } from './walk.js';

/** True when the statement's tokens hold a `double` not followed by `precision` (the cheap test first). */
export function mentionsDoubleType(tokens: readonly Token[], first: number, end: number): boolean {
  for (let index = first; index < end; index++) {
    if (isWord(tokens[index], 'DOUBLE') && !isWord(tokens[index + 1], 'PRECISION')) return true;
  }
  return false;
}

/** Rewrites every TypeName `double` under `root` to pg_catalog.float8, in place. */
export function normalizeDoubleType(root: Node): void {
  forEachProperty(root, (record, key, value) => {
    if (key !== 'names' || !('typemod' in record) || !Array.isArray(value)) return;
    const names = value as { String?: { sval?: string } }[];
    if (names.length === 1 && names[0]?.String?.sval === 'double' && record['typmods'] === undefined) {
      record['names'] = [{ String: { sval: 'pg_catalog' } }, { String: { sval: 'float8' } }];
    }
  });
}
