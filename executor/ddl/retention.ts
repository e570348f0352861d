// The `retention` storage parameter of tables and materialized views: how long old versions stay
// readable with FOR SYSTEM_TIME. `CREATE TABLE t (...) WITH (retention = '1 day')`,
// `CREATE MATERIALIZED VIEW v WITH (retention = '2 hours') AS ...`,
// `ALTER TABLE | MATERIALIZED VIEW x SET (retention = '30 minutes')` and `RESET (retention)`.
// Without it an object uses the server's --time-travel-retention. The value is an interval
// (text) or a whole number of seconds; any other parameter name is PostgreSQL's 22023.

import type { DefElem, Node } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import { parseValue } from '../../sql/functions.js';
import { type } from '../../sql/types.js';
import type { Interval } from '../../sql/value.js';

const MILLIS_PER_DAY = 86_400_000;

export interface RetentionOption {
  /** Milliseconds; undefined with `reset`: back to the server default. */
  readonly retentionMs: number | undefined;
}

/** The retention of a WITH (...) / SET (...) list; undefined when the list does not name it. */
export function retentionOption(options: readonly Node[] | undefined, mode: 'set' | 'reset' = 'set'): RetentionOption | undefined {
  let result: RetentionOption | undefined;
  for (const item of options ?? []) {
    const definition = (item as { DefElem?: DefElem }).DefElem;
    if (definition === undefined) continue;
    const name = (definition.defname ?? '').toLowerCase();
    if (name !== 'retention' || definition.defnamespace !== undefined) {
      throw new SqlError(SqlState.invalidParameterValue, `unrecognized parameter "${definition.defnamespace === undefined ? '' : `${definition.defnamespace}.`}${definition.defname ?? ''}"`, {
        hint: 'oxbow knows the storage parameter "retention" (an interval, e.g. \'1 day\').',
      });
    }
    result = { retentionMs: mode === 'reset' ? undefined : retentionMillis(definition.arg) };
  }
  return result;
}

function retentionMillis(argument: Node | undefined): number {
  const text = (argument as { String?: { sval?: string } } | undefined)?.String?.sval;
  const seconds = (argument as { Integer?: { ival?: number } } | undefined)?.Integer?.ival;
  let millis: number;
  if (text !== undefined) {
    let interval: Interval;
    try {
      interval = parseValue(text, type('interval')) as Interval;
    } catch {
      throw new SqlError(SqlState.invalidParameterValue, `invalid value for parameter "retention": "${text}"`, {
        hint: "Give an interval such as '10 minutes' or '1 day'.",
      });
    }
    millis = (interval.months * 30 + interval.days) * MILLIS_PER_DAY + interval.micros / 1000;
  } else if (argument !== undefined && (argument as { Integer?: unknown }).Integer !== undefined) {
    millis = (seconds ?? 0) * 1000;
  } else {
    throw new SqlError(SqlState.invalidParameterValue, 'parameter "retention" requires a value', {
      hint: "Give an interval such as '10 minutes' or '1 day'.",
    });
  }
  if (!(millis >= 1000) || !Number.isFinite(millis)) {
    throw new SqlError(SqlState.invalidParameterValue, 'parameter "retention" must be at least 1 second');
  }
  return Math.round(millis);
}
