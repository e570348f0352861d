// The text of reg* values (regclass, regtype, regproc, regnamespace), as PostgreSQL's output
// functions print them: the object's name, schema-qualified when the schema is not on the search
// path, the bare number for an OID that names nothing. The session hands this to the EvalContext
// (`objectName`) so results over the wire and `::text` casts print names.

import type { TypeName } from '../sql/types.js';
import { typeFromOid } from '../sql/types.js';
import { allFunctions } from '../sql/functions.js';
import type { ScalarFunction } from '../sql/functions.js';
import type { CatalogSnapshot } from './catalog.js';
import { formatTypeName } from './type-names.js';
import { quoteIdentifier } from './system/system-context.js';

let functionsByOid: Map<number, ScalarFunction> | undefined;

function functionByOid(oid: number): ScalarFunction | undefined {
  if (functionsByOid === undefined) {
    functionsByOid = new Map();
    for (const fn of allFunctions()) if (!functionsByOid.has(fn.oid)) functionsByOid.set(fn.oid, fn);
  }
  return functionsByOid.get(oid);
}

export function objectName(catalog: CatalogSnapshot, searchPath: readonly string[], type: TypeName, oid: number): string | undefined {
  switch (type) {
    case 'regclass': {
      const relation = catalog.relationById(oid);
      if (relation === undefined) return undefined;
      const visible = relation.schema === 'pg_catalog' || searchPath.includes(relation.schema);
      return visible ? quoteIdentifier(relation.name) : `${quoteIdentifier(relation.schema)}.${quoteIdentifier(relation.name)}`;
    }
    case 'regnamespace': {
      const schema = catalog.schemaById(oid);
      return schema === undefined ? undefined : quoteIdentifier(schema.name);
    }
    case 'regtype': {
      const known = typeFromOid(oid);
      return known === undefined ? undefined : formatTypeName(known);
    }
    case 'regproc': {
      const fn = functionByOid(oid);
      return fn === undefined ? undefined : quoteIdentifier(fn.name);
    }
    default:
      return undefined;
  }
}
