// The text of reg* values (regclass, regtype, regproc, regprocedure, regnamespace), as PostgreSQL's output
// functions print them: the object's name, schema-qualified when the schema is not on the search
// path, the bare number for an OID that names nothing. The session hands this to the EvalContext
// (`objectName`) so results over the wire and `::text` casts print names.

import type { TypeName } from '../../sql/types.js';
import { typeFromOid } from '../../sql/types.js';
import { allFunctions } from '../../sql/functions.js';
import type { ScalarFunction } from '../../sql/functions.js';
import type { CatalogSnapshot } from './catalog.js';
import { PSEUDO_TYPES, formatTypeName } from './type-names.js';
import { TYPE_IO_FUNCTIONS } from '../../sql/functions.js';

let functionsByOid: Map<number, ScalarFunction> | undefined;

function functionByOid(oid: number): ScalarFunction | undefined {
  if (functionsByOid === undefined) {
    functionsByOid = new Map();
    for (const fn of allFunctions()) if (!functionsByOid.has(fn.oid)) functionsByOid.set(fn.oid, fn);
  }
  return functionsByOid.get(oid);
}

export function objectName(catalog: CatalogSnapshot, searchPath: readonly string[], type: TypeName, oid: number): string | undefined {
  // InvalidOid prints as "-" for every reg* type (PostgreSQL's regclassout, regtypeout ...).
  if (oid === 0) return '-';
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
      if (known !== undefined) return formatTypeName(known);
      // The pseudo-types pg_type lists.
      return PSEUDO_TYPES.find((pseudo) => pseudo.oid === oid)?.name;
    }
    case 'regproc': {
      // regprocout: an overloaded name would not read back as this function, so it is qualified.
      const sqlFunction = catalog.functionById(oid);
      if (sqlFunction !== undefined) {
        const sameName = catalog.resolveFunctions(undefined, sqlFunction.name, searchPath);
        const unique = sameName.length === 1 && sameName[0]!.id === oid && !allFunctions().some((f) => f.name === sqlFunction.name);
        return unique ? quoteIdentifier(sqlFunction.name) : `${quoteIdentifier(sqlFunction.schema)}.${quoteIdentifier(sqlFunction.name)}`;
      }
      const fn = functionByOid(oid);
      if (fn === undefined) {
        const io = TYPE_IO_FUNCTIONS.find((entry) => entry[0] === oid);
        return io === undefined ? undefined : io[1];
      }
      const overloaded = new Set(allFunctions().filter((f) => f.name === fn.name).map((f) => f.oid)).size > 1;
      return overloaded ? `pg_catalog.${quoteIdentifier(fn.name)}` : quoteIdentifier(fn.name);
    }
    case 'regprocedure': {
      // format_procedure: the name qualified when the function is not the one its name and
      // argument types find through the search path.
      const sqlFunction = catalog.functionById(oid);
      if (sqlFunction !== undefined) {
        const signature = sqlFunction.argumentTypes.map(formatTypeName).join(',');
        const found = catalog.resolveFunctions(undefined, sqlFunction.name, searchPath).find((f) => f.argumentTypes.map(formatTypeName).join(',') === signature);
        const name = found?.id === oid ? quoteIdentifier(sqlFunction.name) : `${quoteIdentifier(sqlFunction.schema)}.${quoteIdentifier(sqlFunction.name)}`;
        return `${name}(${signature})`;
      }
      const fn = functionByOid(oid);
      return fn === undefined ? undefined : `${quoteIdentifier(fn.name)}(${fn.argumentTypes.map(formatTypeName).join(',')})`;
    }
    default:
      return undefined;
  }
}

/** An identifier as PostgreSQL prints it: bare when lower-case and plain, else double-quoted. */
export function quoteIdentifier(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}
