// What a generator connector (nexmark, datagen) provides to the generator reader: splits, each a
// deterministic sequence of rows addressed by an offset (a number of units: events for Nexmark,
// rows for datagen), so a restart at a committed offset produces exactly what would have followed.
// Also the option parsing both connectors share.

import { SqlError, SqlState } from '../../../sql/errors.js';
import type { Row } from '../../../sql/value.js';

export interface SplitProducer {
  readonly splits: number;
  /** Rows per produced chunk at most. */
  readonly maxChunkRows: number;
  /** Units per second per split (a rate limit), 0 for as fast as possible. */
  readonly unitsPerSecond: number;
  /** The offset where a split ends (exclusive), undefined for no end. */
  end(split: number): number | undefined;
  /**
   * Appends to `out` the rows of `split` from unit `offset` up to (not including) unit `limit`,
   * at most `maxRows` rows, each already in the relation's row layout (the row id, if any, left
   * null); returns the offset after the last unit read.
   */
  produce(split: number, offset: number, limit: number, out: Row[], maxRows: number): number;
}

export function invalidOption(message: string, hint?: string): SqlError {
  return new SqlError(SqlState.invalidParameterValue, message, hint === undefined ? {} : { hint });
}

/** An integer option within [minimum, maximum]; 22023 otherwise. */
export function parseIntegerOption(key: string, text: string, minimum: number, maximum: number): number {
  const trimmed = text.trim();
  const value = /^[+-]?\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < minimum || value > maximum) {
    throw invalidOption(`invalid value for ${key}: "${text}"`, `Expected an integer from ${minimum} to ${maximum}.`);
  }
  return value;
}

export function parseBooleanOption(key: string, text: string): boolean {
  const lower = text.trim().toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  throw invalidOption(`invalid value for ${key}: "${text}"`, 'Expected true or false.');
}
