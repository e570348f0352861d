// Array functions over one-dimensional arrays of any element type (PostgreSQL's anyarray
// functions, specialized per call for the element type): array_length, cardinality,
// array_lower/upper, array_append, array_prepend, array_cat, array_position, array_remove,
// array_replace. Multi-dimensional arrays report their dimensions but are otherwise treated as
// their flattened elements.

import { SqlError, SqlState } from '../errors.js';
import type { DataType } from '../types.js';
import { arrayOf, type } from '../types.js';
import type { SqlArray, Value } from '../value.js';
import { compareValues } from '../compare.js';
import { ANY, defineFunction } from './registry.js';

function elementOf(t: DataType): DataType | undefined {
  if (t.name !== 'array') return undefined;
  return t.element ?? type('text');
}

function dimensions(array: SqlArray): readonly number[] {
  return array.dims ?? (array.elements.length === 0 ? [] : [array.elements.length]);
}

function equalElements(a: Value, b: Value, element: DataType): boolean {
  if (a === null || b === null) return a === b;
  return compareValues(a, b, element) === 0;
}

defineFunction('array_length', {
  args: [ANY, 'int4'], returns: 'int4', impl: () => null,
  specialize: (types) => (elementOf(types[0]!) === undefined ? undefined : {
    impl: ([a, d]) => {
      const dims = dimensions(a as SqlArray);
      const dimension = d as number;
      return dimension >= 1 && dimension <= dims.length ? dims[dimension - 1]! : null;
    },
  }),
});
defineFunction('cardinality', {
  args: [ANY], returns: 'int4', impl: () => null,
  specialize: (types) => (elementOf(types[0]!) === undefined ? undefined : { impl: ([a]) => (a as SqlArray).elements.length }),
});
defineFunction('array_lower', {
  args: [ANY, 'int4'], returns: 'int4', impl: () => null,
  specialize: (types) => (elementOf(types[0]!) === undefined ? undefined : {
    impl: ([a, d]) => ((d as number) >= 1 && (d as number) <= dimensions(a as SqlArray).length ? 1 : null),
  }),
});
defineFunction('array_upper', {
  args: [ANY, 'int4'], returns: 'int4', impl: () => null,
  specialize: (types) => (elementOf(types[0]!) === undefined ? undefined : {
    impl: ([a, d]) => {
      const dims = dimensions(a as SqlArray);
      return (d as number) >= 1 && (d as number) <= dims.length ? dims[(d as number) - 1]! : null;
    },
  }),
});
defineFunction('array_ndims', {
  args: [ANY], returns: 'int4', impl: () => null,
  specialize: (types) => (elementOf(types[0]!) === undefined ? undefined : { impl: ([a]) => (dimensions(a as SqlArray).length || null) }),
});

defineFunction('array_append', {
  args: [ANY, ANY], returns: 'unknown', strict: false, impl: () => null,
  specialize: (types) => {
    const element = elementOf(types[0]!);
    if (element === undefined) return undefined;
    return { returnType: types[0], argumentCasts: [types[0]!, element], impl: ([a, b]) => ({ kind: 'array', elements: [...(a === null ? [] : (a as SqlArray).elements), b] } as SqlArray) };
  },
});
defineFunction('array_prepend', {
  args: [ANY, ANY], returns: 'unknown', strict: false, impl: () => null,
  specialize: (types) => {
    const element = elementOf(types[1]!);
    if (element === undefined) return undefined;
    return { returnType: types[1], argumentCasts: [element, types[1]!], impl: ([a, b]) => ({ kind: 'array', elements: [a, ...(b === null ? [] : (b as SqlArray).elements)] } as SqlArray) };
  },
});
defineFunction('array_cat', {
  args: [ANY, ANY], returns: 'unknown', strict: false, impl: () => null,
  specialize: (types) => {
    if (elementOf(types[0]!) === undefined || elementOf(types[1]!) === undefined) return undefined;
    return {
      returnType: types[0],
      impl: ([a, b]) => {
        if (a === null) return b;
        if (b === null) return a;
        return { kind: 'array', elements: [...(a as SqlArray).elements, ...(b as SqlArray).elements] } as SqlArray;
      },
    };
  },
});
defineFunction('array_position', {
  args: [ANY, ANY], returns: 'int4', strict: false, impl: () => null,
  specialize: (types) => {
    const element = elementOf(types[0]!);
    if (element === undefined) return undefined;
    return {
      argumentCasts: [types[0]!, element],
      impl: ([a, b]) => {
        if (a === null) return null;
        const index = (a as SqlArray).elements.findIndex((item) => equalElements(item, b ?? null, element));
        return index < 0 ? null : index + 1;
      },
    };
  },
});
defineFunction('array_remove', {
  args: [ANY, ANY], returns: 'unknown', strict: false, impl: () => null,
  specialize: (types) => {
    const element = elementOf(types[0]!);
    if (element === undefined) return undefined;
    return {
      returnType: types[0],
      argumentCasts: [types[0]!, element],
      impl: ([a, b]) => {
        if (a === null) return null;
        if ((a as SqlArray).dims !== undefined && (a as SqlArray).dims!.length > 1) {
          throw new SqlError(SqlState.featureNotSupported, 'removing elements from multidimensional arrays is not supported');
        }
        return { kind: 'array', elements: (a as SqlArray).elements.filter((item) => !equalElements(item, b ?? null, element)) } as SqlArray;
      },
    };
  },
});
defineFunction('array_replace', {
  args: [ANY, ANY, ANY], returns: 'unknown', strict: false, impl: () => null,
  specialize: (types) => {
    const element = elementOf(types[0]!);
    if (element === undefined) return undefined;
    return {
      returnType: types[0],
      argumentCasts: [types[0]!, element, element],
      impl: ([a, b, c]) => (a === null ? null : ({ kind: 'array', elements: (a as SqlArray).elements.map((item) => (equalElements(item, b ?? null, element) ? c ?? null : item)), dims: (a as SqlArray).dims } as SqlArray)),
    };
  },
});

// keep the text[] type handy for callers that build arrays of text
export const TEXT_ARRAY = arrayOf(type('text'));
