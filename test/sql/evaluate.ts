// A tiny evaluator for differential tests of the function library: resolves a function or
// operator by argument types exactly as the planner does (resolveFunction / resolveOperator, then
// the argument casts in implicit context), evaluates it on values parsed from text, and prints the
// result with formatValue. No planner involved, so a failure points at sql/.
import { SqlError } from '../../sql/errors.js';
import {
  DEFAULT_EVAL_CONTEXT, formatValue, parseValue, resolveCast, resolveFunction, resolveOperator, type EvalContext, type Resolved,
} from '../../sql/functions.js';
import type { DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';
import type { Outcome } from './differential.js';

export interface Call {
  /** Function name, or operator symbol with `operator: true`. */
  readonly name: string;
  readonly operator?: boolean;
  readonly types: readonly DataType[];
  /** An explicit cast of the single argument to this type instead of a function call. */
  readonly castTo?: DataType;
}

export function resolve(call: Call): Resolved {
  const resolved = call.operator
    ? resolveOperator(call.name, call.types.length === 1 ? undefined : call.types[0], call.types[call.types.length - 1]!)
    : resolveFunction(call.name, call.types);
  if (resolved === undefined) throw new Error(`test setup: no ${call.operator ? 'operator' : 'function'} ${call.name}(${call.types.map((t) => t.name).join(', ')})`);
  return resolved;
}

/** Our outcome of a call on text arguments (null = SQL NULL). */
export function evaluate(call: Call, args: readonly (string | null)[], context: EvalContext = DEFAULT_EVAL_CONTEXT): Outcome {
  try {
    if (call.castTo !== undefined) {
      const cast = resolveCast(call.types[0]!, call.castTo, 'explicit');
      if (cast === undefined) throw new Error(`test setup: no cast ${call.types[0]!.name} -> ${call.castTo.name}`);
      if (args[0] === null) return { text: null };
      const result = cast(parseValue(args[0]!, call.types[0]!, context), context);
      return { text: result === null ? null : formatValue(result, call.castTo, context) };
    }
    const resolved = resolve(call);
    const values: Value[] = args.map((text, i) => {
      if (text === null) return null;
      const from = call.types[i]!;
      const value = parseValue(text, from, context);
      const target = resolved.argumentCasts[i] ?? from;
      if (target.name === from.name && (target.name !== 'array' || target.element?.name === from.element?.name)) return value;
      const cast = resolveCast(from, target, 'implicit');
      if (cast === undefined) throw new Error(`test setup: no implicit cast ${from.name} -> ${target.name}`);
      return cast(value, context);
    });
    if (resolved.fn.strict && values.some((v) => v === null)) return { text: null };
    const result = resolved.fn.impl(values, context);
    return { text: result === null ? null : formatValue(result, resolved.fn.returnType, context) };
  } catch (error) {
    if (error instanceof SqlError) return { code: error.code, message: error.message };
    throw error;
  }
}
