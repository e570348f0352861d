// Execute ('E'): runs a portal, returning at most maxRows rows (0: all).

import { MessageReader } from '../message-reader.js';

export interface ExecuteMessage {
  readonly portalName: string;
  readonly maxRows: number;
}

export function readExecute(payload: Buffer): ExecuteMessage {
  const reader = new MessageReader(payload, 'Execute');
  const portalName = reader.cstring();
  const maxRows = reader.int32();
  reader.expectEnd();
  return { portalName, maxRows: maxRows < 0 ? 0 : maxRows };
}
