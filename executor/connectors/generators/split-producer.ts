// What a generator connector (nexmark, datagen) provides to the generator reader: splits, each a
// deterministic sequence of rows addressed by an offset (a number of units: events for Nexmark,
// rows for datagen), so a restart at a committed offset produces exactly what would have followed.
// Also the option parsing both connectors share.

import { SqlError, SqlState } from '../../../sql/errors.js';
import type { Row } from '../../../sql/value.js';

export interface SplitProducer {
  readonly splits: number;
  /**
   * Whether a unit depends only on the options and its number (a replay of units [0, n) is the
   * same rows, byte for byte): then a source can store its position instead of its rows.
   */
  readonly deterministic: boolean;
  /** Rows per produced chunk at most. */
  readonly maxChunkRows: number;
  /** Units per second per split (a rate limit), 0 for as fast as possible. */
  readonly unitsPerSecond: number;
  /** The offset where a split ends (exclusive), undefined for no end. */
  end(split: number): number | undefined;
  /**
   * Appends to `out` the rows of `split` from unit `offset` up to (not including) unit `limit`,
   * at most `maxRows` rows, each already in the relation's row layout (the row id, if any, null,
   * or the unit's number g = split + offset * splits when the producer was built with unit ids);
   * returns the offset after the last unit read.
   */
  produce(split: number, offset: number, limit: number, out: Row[], maxRows: number): number;
  /**
   * Appends the rows of units g = `start`, `start` + 1, ... below `end` over all splits (a replay
   * in unit order), at most `maxRows` rows; returns the unit after the last one read.
   */
  produceRange(start: number, end: number, out: Row[], maxRows: number): number;
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
