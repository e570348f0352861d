// The table of scalar functions and operators: each library file (math.ts, string.ts, ...)
// registers its entries here at import time; function-resolution.ts looks them up. Operators are
// registered under their symbol (`+`, `||`, `->>`) with one or two argument types; a prefix
// operator has one.

import type { DataType, TypeName } from '../types.js';
import { arrayOf, type } from '../types.js';
import type { ScalarFunction, ScalarImpl } from '../functions.js';

export const functionsByName = new Map<string, ScalarFunction[]>();
export const operatorsBySymbol = new Map<string, ScalarFunction[]>();

export type TypeSpec = Exclude<TypeName, 'array'> | DataType;

export function toType(spec: TypeSpec): DataType {
  return typeof spec === 'string' ? type(spec) : spec;
}

export const textArray = arrayOf(type('text'));

export interface Definition {
  readonly oid: number;
  readonly args: readonly TypeSpec[];
  readonly returns: TypeSpec;
  readonly impl: ScalarImpl;
  readonly strict?: boolean;
  readonly volatility?: 'immutable' | 'stable' | 'volatile';
  readonly variadic?: TypeSpec;
}

function build(name: string, definition: Definition): ScalarFunction {
  return Object.freeze({
    name,
    argumentTypes: definition.args.map(toType),
    variadic: definition.variadic === undefined ? undefined : toType(definition.variadic),
    returnType: toType(definition.returns),
    strict: definition.strict ?? true,
    volatility: definition.volatility ?? 'immutable',
    impl: definition.impl,
    oid: definition.oid,
  });
}

export function defineFunction(name: string, definition: Definition): void {
  const list = functionsByName.get(name) ?? [];
  list.push(build(name, definition));
  functionsByName.set(name, list);
}

export function defineOperator(symbol: string, definition: Definition): void {
  const list = operatorsBySymbol.get(symbol) ?? [];
  list.push(build(symbol, definition));
  operatorsBySymbol.set(symbol, list);
}
