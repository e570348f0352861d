// Function and operator resolution, PostgreSQL's rules (func_select_candidate) simplified:
//   1. an exact match of the argument types wins;
//   2. otherwise the candidates every argument can reach by an implicit cast (unknown-typed
//      literals reach anything) are kept; among them, the ones with the most exact matches;
//      then the ones whose argument types are the preferred type of their category (float8 for
//      numbers, text for strings, timestamptz for date/time, interval for timespans) at the
//      positions that needed a cast; then, when unknown literals remain, the candidates whose
//      type at those positions is in the category of the known arguments (or string);
//   3. one candidate left: it; more than one: ambiguous (undefined, the planner reports 42725 if it
//      wants to distinguish), none: undefined (42883).
// Not modelled: polymorphic pseudo-types, variadic "any" (concat etc. are registered with a
// variadic element type), domain types. `commonType` is PostgreSQL's select_common_type.

import type { DataType } from './types.js';
import { TYPES, sameType, type } from './types.js';
import type { Resolved, ScalarFunction } from './functions.js';
import { canCastImplicitly } from './casts.js';
import { ANY, functionsByName, operatorsBySymbol, specializers } from './functions/registry.js';
import './functions/library.js';

const preferredTypes: Record<string, string> = { N: 'float8', S: 'text', D: 'timestamptz', T: 'interval', B: 'bool', U: '', A: '' };

function categoryOf(t: DataType): string {
  return t.name === 'array' ? 'A' : TYPES[t.name].category;
}

function isPreferred(t: DataType): boolean {
  return t.name !== 'array' && preferredTypes[categoryOf(t)] === t.name;
}

function expandArguments(fn: ScalarFunction, count: number): readonly DataType[] | undefined {
  if (fn.argumentTypes.length === count) return fn.argumentTypes;
  if (fn.variadic !== undefined && count >= fn.argumentTypes.length) {
    const expanded = [...fn.argumentTypes];
    while (expanded.length < count) expanded.push(fn.variadic);
    return expanded;
  }
  return undefined;
}

function reachable(from: DataType, to: DataType): boolean {
  if (from.name === 'unknown' || to === ANY) return true;
  if (sameType(from, to)) return true;
  return canCastImplicitly(from, to);
}

/** Resolution among given candidates (SQL functions of the catalog; planner/binder/sql-function.ts). */
export function selectFunction(candidates: readonly ScalarFunction[], argumentTypes: readonly DataType[]): Resolved | undefined {
  return select(candidates, argumentTypes);
}

function select(candidates: readonly ScalarFunction[] | undefined, argumentTypes: readonly DataType[]): Resolved | undefined {
  if (candidates === undefined) return undefined;
  interface Candidate {
    fn: ScalarFunction;
    types: readonly DataType[];
    exact: number;
    preferred: number;
  }
  const viable: Candidate[] = [];
  for (const fn of candidates) {
    const types = expandArguments(fn, argumentTypes.length);
    if (types === undefined) continue;
    let ok = true;
    let exact = 0;
    let preferred = 0;
    for (let i = 0; i < types.length; i++) {
      const from = argumentTypes[i]!;
      const to = types[i]!;
      if (!reachable(from, to)) {
        ok = false;
        break;
      }
      if (to === ANY) continue;
      if (sameType(from, to)) exact++;
      // preferred types of the input's own category, at positions that need a conversion
      else if (from.name !== 'unknown' && isPreferred(to) && categoryOf(to) === categoryOf(from)) preferred++;
    }
    if (!ok) continue;
    if (exact === types.length) return specialize({ fn, argumentCasts: types }, argumentTypes);
    viable.push({ fn, types, exact, preferred });
  }
  if (viable.length === 0) return undefined;
  if (viable.length === 1) return specialize({ fn: viable[0]!.fn, argumentCasts: viable[0]!.types }, argumentTypes);
  const mostExact = Math.max(...viable.map((c) => c.exact));
  let remaining = viable.filter((c) => c.exact === mostExact);
  if (remaining.length > 1) {
    const mostPreferred = Math.max(...remaining.map((c) => c.preferred));
    remaining = remaining.filter((c) => c.preferred === mostPreferred);
  }
  if (remaining.length > 1 && argumentTypes.some((t) => t.name === 'unknown')) {
    // PostgreSQL: at each unknown position, the string category wins if any candidate accepts it;
    // else all remaining candidates must agree on one category (then its preferred type wins);
    // otherwise the call is ambiguous
    for (let i = 0; i < argumentTypes.length && remaining.length > 1; i++) {
      if (argumentTypes[i]!.name !== 'unknown') continue;
      const categories = new Set(remaining.map((c) => categoryOf(c.types[i]!)));
      if (categories.has('S')) {
        remaining = remaining.filter((c) => categoryOf(c.types[i]!) === 'S');
      } else if (categories.size === 1) {
        const preferred = remaining.filter((c) => isPreferred(c.types[i]!));
        if (preferred.length > 0) remaining = preferred;
      } else {
        return undefined;
      }
      const preferred = remaining.filter((c) => isPreferred(c.types[i]!));
      if (preferred.length > 0 && preferred.length < remaining.length) remaining = preferred;
    }
    if (remaining.length > 1) {
      // all known arguments of one type: assume the unknown ones are of that type too
      const known = argumentTypes.filter((t) => t.name !== 'unknown');
      if (known.length > 0 && known.every((t) => sameType(t, known[0]!))) {
        const matching = remaining.filter((c) => argumentTypes.every((t, i) => t.name !== 'unknown' || reachable(known[0]!, c.types[i]!)));
        if (matching.length === 1) remaining = matching;
      }
    }
  }
  if (remaining.length !== 1) return undefined;
  return specialize({ fn: remaining[0]!.fn, argumentCasts: remaining[0]!.types }, argumentTypes);
}

/** Functions with ANY parameters get an implementation built for the actual argument types. */
function specialize(resolved: Resolved, argumentTypes: readonly DataType[]): Resolved | undefined {
  const argumentCasts = resolved.argumentCasts.map((t, i) => (t === ANY ? argumentTypes[i]! : t));
  const specializer = specializers.get(resolved.fn);
  if (specializer === undefined) return argumentCasts === resolved.argumentCasts ? resolved : { fn: resolved.fn, argumentCasts };
  const built = specializer(argumentCasts);
  if (built === undefined) return undefined;
  const fn: ScalarFunction = Object.freeze({ ...resolved.fn, impl: built.impl, returnType: built.returnType ?? resolved.fn.returnType });
  return { fn, argumentCasts: built.argumentCasts ?? argumentCasts };
}

export function resolveFunction(name: string, argumentTypes: readonly DataType[]): Resolved | undefined {
  return select(functionsByName.get(name.toLowerCase()), argumentTypes);
}

/** A binary (left defined) or prefix (left undefined) operator. */
export function resolveOperator(operator: string, left: DataType | undefined, right: DataType): Resolved | undefined {
  const symbol = operator.toLowerCase();
  const argumentTypes = left === undefined ? [right] : [left, right];
  // PostgreSQL: an unknown literal against a known type is first assumed to be of that type
  if (left !== undefined && (left.name === 'unknown') !== (right.name === 'unknown')) {
    const known = left.name === 'unknown' ? right : left;
    const exact = select(operatorsBySymbol.get(symbol), [known, known]);
    if (exact !== undefined && exact.argumentCasts.every((t) => sameType(t, known))) return exact;
  }
  return select(operatorsBySymbol.get(symbol), argumentTypes);
}

/** PostgreSQL's select_common_type for UNION / CASE / COALESCE / VALUES. */
export function commonType(types: readonly DataType[]): DataType | undefined {
  const known = types.filter((t) => t.name !== 'unknown');
  if (known.length === 0) return types.length === 0 ? undefined : type('text');
  let result = known[0]!;
  const category = categoryOf(result);
  for (const next of known.slice(1)) {
    if (sameType(next, result)) {
      if (next.typmod !== result.typmod) result = { ...result, typmod: -1 };
      continue;
    }
    if (categoryOf(next) !== category) return undefined;
    // move to `next` if result converts to it implicitly and not the other way round, or it is preferred
    if (!isPreferred(result) && canCastImplicitly(result, next) && (!canCastImplicitly(next, result) || isPreferred(next))) {
      result = next;
    }
  }
  for (const t of known) if (!reachable(t, result)) return undefined;
  return result.typmod === -1 || known.every((t) => t.typmod === result.typmod) ? result : { ...result, typmod: -1 };
}

let all: ScalarFunction[] | undefined;

/**
 * Every registered named function (not operators), one per pg_proc OID, for pg_proc. Parameters
 * typed ANY ("any") appear as the registry's ANY object (name 'unknown', typmod -2).
 */
export function allFunctions(): readonly ScalarFunction[] {
  if (all === undefined) {
    const seen = new Set<number>();
    all = [];
    for (const list of functionsByName.values()) {
      for (const fn of list) {
        if (seen.has(fn.oid)) continue;
        seen.add(fn.oid);
        all.push(fn);
      }
    }
  }
  return all;
}

let operators: ScalarFunction[] | undefined;

/** Every registered operator (name = the symbol, one or two argument types), for pg_operator. */
export function allOperators(): readonly ScalarFunction[] {
  if (operators === undefined) {
    operators = [];
    for (const list of operatorsBySymbol.values()) operators.push(...list);
  }
  return operators;
}
