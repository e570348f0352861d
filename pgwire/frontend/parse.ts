// Parse ('P'): prepares a named or unnamed statement with optional declared parameter type OIDs
// (0 means "infer it").

import { MessageReader } from '../message-reader.js';

export interface ParseMessage {
  readonly statementName: string;
  readonly sql: string;
  readonly parameterTypeOids: readonly number[];
}

export function readParse(payload: Buffer): ParseMessage {
  const reader = new MessageReader(payload, 'Parse');
  const statementName = reader.cstring();
  const sql = reader.cstring();
  const count = reader.int16();
  const parameterTypeOids: number[] = [];
  for (let i = 0; i < count; i++) parameterTypeOids.push(reader.uint32());
  reader.expectEnd();
  return { statementName, sql, parameterTypeOids };
}
