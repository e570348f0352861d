// One session's view of sequences: nextval / currval / lastval / setval over the engine's
// SequenceRuntime, with the session's own currval per sequence and the last sequence nextval used
// (PostgreSQL keeps both per backend). None of it rolls back with a block's ROLLBACK (PostgreSQL's
// behaviour: a sequence value once handed out is gone).

import type { RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { SequenceRuntime } from './sequence-runtime.js';

export class SessionSequences {
  private readonly current = new Map<number, bigint>();
  private lastUsed: number | undefined;

  constructor(private readonly runtime: SequenceRuntime) {}

  nextval(relation: RelationDef): bigint {
    const value = this.runtime.nextval(relation);
    this.current.set(relation.id, value);
    this.lastUsed = relation.id;
    return value;
  }

  currval(relation: RelationDef): bigint {
    const value = this.current.get(relation.id);
    if (value === undefined) throw new SqlError(SqlState.objectNotInPrerequisiteState, `currval of sequence "${relation.name}" is not yet defined in this session`);
    return value;
  }

  /** lastval(): the value of the sequence nextval used last; `exists` says whether it still exists. */
  lastval(exists: (id: number) => boolean): bigint {
    if (this.lastUsed === undefined || !exists(this.lastUsed)) {
      throw new SqlError(this.lastUsed === undefined ? SqlState.objectNotInPrerequisiteState : SqlState.undefinedTable, 'lastval is not yet defined in this session');
    }
    return this.current.get(this.lastUsed)!;
  }

  setval(relation: RelationDef, value: bigint, called: boolean): bigint {
    this.runtime.setval(relation, value, called);
    // PostgreSQL sets the session's currval only when is_called.
    if (called) this.current.set(relation.id, value);
    return value;
  }
}

/** The sequence an OID names, with PostgreSQL's errors for another relation or none. */
export function sequenceRelation(relation: RelationDef | undefined, oid: number): RelationDef {
  if (relation === undefined) throw new SqlError(SqlState.undefinedTable, `could not open relation with OID ${oid}`);
  if (relation.kind !== 'sequence') throw new SqlError(SqlState.wrongObjectType, `"${relation.name}" is not a sequence`);
  return relation;
}
