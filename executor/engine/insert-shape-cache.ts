// A session's plan cache for one-statement `INSERT ... VALUES (literals)` texts that differ only in
// their literals (sql/parser/insert-values-shape.ts lifts the literals into parameters): the shape
// is parsed once and planned once per catalog version and search path, and each statement runs the
// cached plan with its literals as parameter values. What it saves per statement is the grammar
// call and the planner (about 0.2 ms of a one-row INSERT's ~1 ms; BENCHMARKS.md, "One-row
// INSERT to visible under a view").
//
// Exactness: a lifted literal is a parameter of the type PostgreSQL gives the literal (int4, int8,
// numeric, bool; unknown for a string or NULL, so the column decides), and a string is converted
// with the type's text input, as a literal is. Anything the cached path cannot do exactly as the
// ordinary path does (a literal the column type refuses, a plan error, an error before the
// commit) is answered by the session running the same text through the ordinary path, which
// reports the error with its SQLSTATE and position.

import type { ParsedStatement } from '../../sql/parser/ast.js';
import type { ShapeLiteral } from '../../sql/parser/insert-values-shape.js';
import type { EvalContext } from '../../sql/functions.js';
import { parseValue } from '../../sql/text-format.js';
import { type, type DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';
import type { PlannedStatement } from '../../planner/index.js';
import type { CatalogSnapshot } from '../catalog/catalog.js';

/** Shapes kept per session (least recently used dropped first). */
const MAX_SHAPES = 64;

export interface CachedShape {
  /** The parameterized statement (its text has `$n` for the literals). */
  readonly parsed: ParsedStatement;
  readonly declaredParameterTypes: readonly (DataType | undefined)[];
  /** The plan and what it was made against; re-planned when either changes. */
  plan?: { readonly planned: PlannedStatement; readonly catalog: CatalogSnapshot; readonly searchPath: string };
}

export class InsertShapeCache {
  private readonly shapes = new Map<string, CachedShape>();
  /** What the cache did (tests read them): shapes found, shapes parsed, plans made, statements sent down the ordinary path. */
  readonly counts = { hits: 0, parsed: 0, planned: 0, ordinary: 0 };

  get(key: string): CachedShape | undefined {
    const shape = this.shapes.get(key);
    if (shape !== undefined) {
      this.counts.hits++;
      // Most recently used last.
      this.shapes.delete(key);
      this.shapes.set(key, shape);
    }
    return shape;
  }

  add(key: string, parsed: ParsedStatement, literals: readonly ShapeLiteral[]): CachedShape {
    if (this.shapes.size >= MAX_SHAPES) this.shapes.delete(this.shapes.keys().next().value!);
    this.counts.parsed++;
    const shape: CachedShape = { parsed, declaredParameterTypes: literals.map(declaredType) };
    this.shapes.set(key, shape);
    return shape;
  }

  get size(): number {
    return this.shapes.size;
  }
}

function declaredType(literal: ShapeLiteral): DataType | undefined {
  switch (literal.kind) {
    case 'int4':
    case 'int8':
    case 'numeric':
    case 'bool':
      return type(literal.kind);
    case 'string':
    case 'null':
      return undefined;
  }
}

/**
 * The literals as parameter values of the plan's parameter types; throws (SqlError) when a string
 * is not valid input for its type, and returns undefined when a parameter's type carries a type
 * modifier (varchar(3), numeric(10,2)): a parameter of that type is not checked against it the way
 * a literal is, so such a statement takes the ordinary path.
 */
export function literalParameters(literals: readonly ShapeLiteral[], types: readonly DataType[], context: EvalContext): Value[] | undefined {
  const values: Value[] = new Array<Value>(literals.length);
  for (let index = 0; index < literals.length; index++) {
    const literal = literals[index]!;
    const parameterType = types[index]!;
    if (parameterType.typmod !== -1) return undefined;
    if (literal.kind === 'null') values[index] = null;
    else if (literal.kind === 'string' && (parameterType.name === 'text' || parameterType.name === 'varchar' || parameterType.name === 'unknown')) values[index] = literal.text;
    else values[index] = parseValue(literal.text, parameterType, context);
  }
  return values;
}
