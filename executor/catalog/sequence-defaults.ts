// COPY FROM fills a column it does not list with the column's default, evaluated once for the
// whole COPY. A serial or identity column's default, nextval('seq'::regclass), is evaluated per
// row instead: each row takes its own value, as in PostgreSQL.

import { columnDefaultSql, type RelationDef } from '../../sql/catalog.js';
import type { Value } from '../../sql/value.js';

const NEXTVAL = /^\s*nextval\s*\(\s*'((?:[^']|'')*)'(?:::regclass)?\s*\)\s*$/i;

/** The sequence a default of the form nextval('name'::regclass) reads, as its name text; undefined for another default. */
export function nextvalTarget(defaultSql: string | undefined): string | undefined {
  const match = defaultSql === undefined ? null : NEXTVAL.exec(defaultSql);
  return match === null ? undefined : match[1]!.replace(/''/g, "'");
}

/** Split `schema.name` / `"Quoted"` as regclass input does. */
function splitName(text: string): { schema: string | undefined; name: string } {
  const parts = (text.match(/"(?:[^"]|"")*"|[^.]+/g) ?? []).map((part) => (part.startsWith('"') ? part.slice(1, -1).replace(/""/g, '"') : part.toLowerCase()));
  return { schema: parts.length > 1 ? parts[parts.length - 2] : undefined, name: parts[parts.length - 1] ?? '' };
}

export interface PerRowDefault {
  readonly column: number;
  next(): Value;
}

/** The unlisted columns whose default is a nextval, each with a function giving the next value. */
export function perRowSequenceDefaults(
  relation: RelationDef,
  listed: readonly number[],
  /** A relation by name, or by OID when `name` is `#` and digits. */
  resolve: (schema: string | undefined, name: string) => RelationDef | undefined,
  nextval: (sequence: RelationDef) => bigint,
): PerRowDefault[] {
  const defaults: PerRowDefault[] = [];
  relation.columns.forEach((column, index) => {
    if (listed.includes(index)) return;
    const target = nextvalTarget(columnDefaultSql(column));
    if (target === undefined) return;
    // An identity column's default names its sequence by OID ('16390'::regclass): `#` + digits.
    const split = splitName(target);
    const sequence = /^\d+$/.test(target) ? resolve(undefined, `#${target}`) : resolve(split.schema, split.name);
    if (sequence === undefined || sequence.kind !== 'sequence') return;
    const asInt8 = column.type.name === 'int8';
    defaults.push({ column: index, next: () => (asInt8 ? nextval(sequence) : Number(nextval(sequence))) });
  });
  return defaults;
}
