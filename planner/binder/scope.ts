// Name scopes of the binder: the relations visible in a FROM clause, where each one's columns sit
// in the input row, and the enclosing query's scope for correlated references. Resolution follows
// PostgreSQL: an unqualified name must match exactly one visible column (42702 otherwise), a
// qualified one names a relation alias (or schema.relation).

import type { DataType } from '../../sql/types.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { Expression } from '../expression.js';

export interface ScopeColumn {
  readonly name: string;
  readonly type: DataType;
  readonly hidden: boolean;
  readonly tableOid: number;
  readonly columnNumber: number;
  /** Position in the input row. */
  readonly index: number;
}

export interface ScopeRelation {
  /** The alias, or the relation's name. */
  readonly alias: string;
  /** The schema when the relation is a catalog relation referenced without alias. */
  readonly schema?: string;
  readonly columns: readonly ScopeColumn[];
}

/** A column merged by JOIN USING / NATURAL: unqualified references read `expression`. */
export interface MergedColumn {
  readonly name: string;
  readonly expression: Expression;
  readonly type: DataType;
}

export class Scope {
  readonly relations: ScopeRelation[] = [];
  readonly merged: MergedColumn[] = [];
  /** Names of merged columns hidden from unqualified lookup in each side. */
  readonly parent: Scope | undefined;

  constructor(parent?: Scope) {
    this.parent = parent;
  }

  get width(): number {
    let width = 0;
    for (const relation of this.relations) for (const c of relation.columns) width = Math.max(width, c.index + 1);
    return width;
  }

  /** Looks `fields` up here, then in enclosing scopes; returns the expression and its depth. */
  resolve(fields: readonly string[], position: number | undefined): Expression {
    let depth = 0;
    for (let scope: Scope | undefined = this; scope !== undefined; scope = scope.parent, depth++) {
      const found = scope.lookup(fields, position);
      if (found !== undefined) {
        if (depth === 0) return found;
        if (found.kind !== 'Column') {
          throw new SqlError(SqlState.featureNotSupported, `correlated reference to a merged join column "${fields.join('.')}" is not supported`, { position });
        }
        return { kind: 'OuterColumn', depth, index: found.index, type: found.type };
      }
    }
    const name = fields.join('.');
    if (fields.length > 1) {
      const relationName = fields[fields.length - 2]!;
      if (!this.hasRelation(relationName)) {
        throw new SqlError(SqlState.undefinedTable, `missing FROM-clause entry for table "${relationName}"`, { position });
      }
    }
    throw new SqlError(SqlState.undefinedColumn, `column ${quoteName(name)} does not exist`, { position });
  }

  private hasRelation(alias: string): boolean {
    for (let scope: Scope | undefined = this; scope !== undefined; scope = scope.parent) {
      if (scope.relations.some((r) => r.alias === alias)) return true;
    }
    return false;
  }

  /** This scope only: undefined when not found. */
  lookup(fields: readonly string[], position: number | undefined): Expression | undefined {
    const name = fields[fields.length - 1]!;
    if (fields.length === 1) {
      const merged = this.merged.find((m) => m.name === name);
      if (merged !== undefined) return merged.expression;
      let match: ScopeColumn | undefined;
      for (const relation of this.relations) {
        for (const c of relation.columns) {
          if (c.name !== name) continue;
          if (match !== undefined) throw new SqlError(SqlState.ambiguousColumn, `column reference "${name}" is ambiguous`, { position });
          match = c;
        }
      }
      return match === undefined ? undefined : { kind: 'Column', index: match.index, type: match.type, ...(position === undefined ? {} : { position }) };
    }
    const relation = this.findRelation(fields.slice(0, -1), position);
    if (relation === undefined) return undefined;
    const c = relation.columns.find((x) => x.name === name);
    if (c === undefined) {
      throw new SqlError(SqlState.undefinedColumn, `column ${relation.alias}.${name} does not exist`, { position });
    }
    return { kind: 'Column', index: c.index, type: c.type, ...(position === undefined ? {} : { position }) };
  }

  findRelation(qualifier: readonly string[], position: number | undefined): ScopeRelation | undefined {
    const alias = qualifier[qualifier.length - 1]!;
    const schema = qualifier.length > 1 ? qualifier[qualifier.length - 2] : undefined;
    const matches = this.relations.filter((r) => r.alias === alias && (schema === undefined || r.schema === schema));
    if (matches.length > 1) throw new SqlError(SqlState.ambiguousColumn, `table reference "${alias}" is ambiguous`, { position });
    return matches[0];
  }
}

/** PostgreSQL quotes a name in messages only when needed; messages use "name". */
export function quoteName(name: string): string {
  return `"${name}"`;
}
