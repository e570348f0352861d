// Query ('Q'): one string holding any number of statements (the simple query protocol).

import { MessageReader } from '../message-reader.js';

export function readQuery(payload: Buffer): string {
  const reader = new MessageReader(payload, 'Query');
  const sql = reader.cstring();
  reader.expectEnd();
  return sql;
}
