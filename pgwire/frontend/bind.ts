// Bind ('B'): creates a portal from a prepared statement, with parameter values (text or binary,
// null as length -1) and the result column formats.

import { SqlError, SqlState } from '../../sql/errors.js';
import { MessageReader } from '../message-reader.js';

export interface BindMessage {
  readonly portalName: string;
  readonly statementName: string;
  /** 0 (text) or 1 (binary) per parameter, already expanded from PostgreSQL's 0/1/n rule. */
  readonly parameterFormats: readonly number[];
  /** Raw parameter bytes; null for SQL NULL. */
  readonly parameters: readonly (Buffer | null)[];
  /** As sent: empty (all text), one (for all columns) or one per column. */
  readonly resultFormats: readonly number[];
}

export function readBind(payload: Buffer): BindMessage {
  const reader = new MessageReader(payload, 'Bind');
  const portalName = reader.cstring();
  const statementName = reader.cstring();
  const formatCount = reader.int16();
  const formats: number[] = [];
  for (let i = 0; i < formatCount; i++) formats.push(checkFormat(reader.int16()));
  const parameterCount = reader.int16();
  if (formatCount > 1 && formatCount !== parameterCount) {
    throw new SqlError(SqlState.protocolViolation, `bind message has ${formatCount} parameter formats but ${parameterCount} parameters`);
  }
  const parameters: (Buffer | null)[] = [];
  for (let i = 0; i < parameterCount; i++) {
    const length = reader.int32();
    parameters.push(length === -1 ? null : reader.bytes(length));
  }
  const parameterFormats: number[] = [];
  for (let i = 0; i < parameterCount; i++) parameterFormats.push(formatCount === 0 ? 0 : formatCount === 1 ? formats[0]! : formats[i]!);
  const resultCount = reader.int16();
  const resultFormats: number[] = [];
  // Result format codes are checked when rows are produced (PostgreSQL echoes even an unknown
  // code in the RowDescription of Describe, and fails at Execute).
  for (let i = 0; i < resultCount; i++) resultFormats.push(reader.int16());
  reader.expectEnd();
  return { portalName, statementName, parameterFormats, parameters, resultFormats };
}

function checkFormat(code: number): number {
  if (code !== 0 && code !== 1) throw new SqlError(SqlState.invalidParameterValue, `unsupported format code: ${code}`);
  return code;
}
