// The values of sequences (nextval, setval, ALTER SEQUENCE RESTART), shared by every session of an
// engine. A value is never handed out twice, even across a crash: before nextval returns a value
// not yet covered, a range ahead of it is reserved with one durable metadata write
// (`StateStore.putMetaNow`, WAL-synced, outside the epochs so no rollback or abort undoes it), and
// a restart resumes after the reserved range, skipping what might have been handed out
// (PostgreSQL WAL-logs 32 values ahead the same way). The range starts at 32 values and doubles,
// up to 65,536, while reservations follow each other within 100 ms (an INSERT ... SELECT of many
// rows), so a bulk insert does not pay one fsync per 32 rows.
//
// Record: metadata key `sequence/<id>`, JSON `{"last":"<int8>","called":<bool>}` (PostgreSQL's
// last_value and is_called); without one the sequence is at its START, not yet called.

import type { RelationDef, SequenceDef } from '../../sql/catalog.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { StateStore } from '../../storage/state-table.js';

const FIRST_RESERVATION = 32n;
const MAX_RESERVATION = 65536n;
const BURST_MS = 100;

interface State {
  last: bigint;
  called: boolean;
  /** The last value a durable record covers (undefined: none; a restart would hand out `last`). */
  covered: bigint | undefined;
  reservation: bigint;
  reservedAtMs: number;
}

export function sequenceMetaKey(id: number): string {
  return `sequence/${id}`;
}

/** The numbers of a sequence's options. */
export interface SequenceNumbers {
  readonly start: bigint;
  readonly increment: bigint;
  readonly min: bigint;
  readonly max: bigint;
  readonly cycle: boolean;
}

export function sequenceNumbers(def: SequenceDef): SequenceNumbers {
  return { start: BigInt(def.start), increment: BigInt(def.increment), min: BigInt(def.min), max: BigInt(def.max), cycle: def.cycle };
}

export class SequenceRuntime {
  private readonly states = new Map<number, State>();

  constructor(
    private readonly store: StateStore,
    /** A read-only engine's refusal (throws), called before any write with the function's name. */
    private readonly refuseWrite?: (command: string) => void,
  ) {}

  /** The current last_value and is_called (pg_sequences, SELECT from the sequence). */
  peek(relation: RelationDef): { last: bigint; called: boolean } {
    const state = this.state(relation);
    return { last: state.last, called: state.called };
  }

  nextval(relation: RelationDef): bigint {
    const numbers = sequenceNumbers(relation.sequence!);
    const state = this.state(relation);
    let next = state.last;
    let wrapped = false;
    if (state.called) {
      next = state.last + numbers.increment;
      if (numbers.increment > 0n && next > numbers.max) {
        if (!numbers.cycle) {
          throw new SqlError(SqlState.sequenceGeneratorLimitExceeded, `nextval: reached maximum value of sequence "${relation.name}" (${numbers.max})`);
        }
        next = numbers.min;
        wrapped = true;
      } else if (numbers.increment < 0n && next < numbers.min) {
        if (!numbers.cycle) {
          throw new SqlError(SqlState.sequenceGeneratorLimitExceeded, `nextval: reached minimum value of sequence "${relation.name}" (${numbers.min})`);
        }
        next = numbers.max;
        wrapped = true;
      }
    }
    const up = numbers.increment > 0n;
    if (wrapped || state.covered === undefined || (up ? next > state.covered : next < state.covered)) this.reserve(relation, state, next, numbers);
    state.last = next;
    state.called = true;
    return next;
  }

  /** setval(seq, value, called), bounds checked; durable before it returns. */
  setval(relation: RelationDef, value: bigint, called: boolean): void {
    const numbers = sequenceNumbers(relation.sequence!);
    if (value < numbers.min || value > numbers.max) {
      throw new SqlError(SqlState.numericValueOutOfRange, `setval: value ${value} is out of bounds for sequence "${relation.name}" (${numbers.min}..${numbers.max})`);
    }
    this.set(relation, value, called);
  }

  /** ALTER SEQUENCE RESTART [WITH value] (checked by the DDL); durable before it returns. */
  restart(relation: RelationDef, value: bigint): void {
    this.set(relation, value, false);
  }

  /** ALTER SEQUENCE changed its options: the next nextval reserves again under the new ones. */
  altered(id: number): void {
    const state = this.states.get(id);
    if (state !== undefined) state.covered = undefined;
  }

  forget(id: number): void {
    this.states.delete(id);
  }

  private set(relation: RelationDef, value: bigint, called: boolean): void {
    const state = this.state(relation);
    this.write(relation.id, value, called, 'setval()');
    state.last = value;
    state.called = called;
    state.covered = called ? value : undefined;
    state.reservation = FIRST_RESERVATION;
  }

  private reserve(relation: RelationDef, state: State, next: bigint, numbers: SequenceNumbers): void {
    const now = Date.now();
    state.reservation = now - state.reservedAtMs < BURST_MS && state.reservation < MAX_RESERVATION ? state.reservation * 2n : FIRST_RESERVATION;
    state.reservedAtMs = now;
    let until = next + numbers.increment * (state.reservation - 1n);
    if (until > numbers.max) until = numbers.max;
    if (until < numbers.min) until = numbers.min;
    this.write(relation.id, until, true, 'nextval()');
    state.covered = until;
  }

  private write(id: number, last: bigint, called: boolean, command: string): void {
    this.refuseWrite?.(command);
    const record = new TextEncoder().encode(JSON.stringify({ last: String(last), called }));
    if (this.store.putMetaNow === undefined) throw new SqlError(SqlState.featureNotSupported, 'sequences need a state store with durable metadata writes');
    this.store.putMetaNow(sequenceMetaKey(id), record);
  }

  private state(relation: RelationDef): State {
    let state = this.states.get(relation.id);
    if (state === undefined) {
      const record = this.store.getMeta(sequenceMetaKey(relation.id));
      if (record === undefined) {
        state = { last: BigInt(relation.sequence!.start), called: false, covered: undefined, reservation: FIRST_RESERVATION, reservedAtMs: 0 };
      } else {
        const parsed = JSON.parse(new TextDecoder().decode(record)) as { last: string; called: boolean };
        const last = BigInt(parsed.last);
        state = { last, called: parsed.called, covered: parsed.called ? last : undefined, reservation: FIRST_RESERVATION, reservedAtMs: 0 };
      }
      this.states.set(relation.id, state);
    }
    return state;
  }
}
