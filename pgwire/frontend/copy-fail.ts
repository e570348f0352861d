// CopyFail ('f'): the client aborts COPY FROM STDIN with a reason.

import { MessageReader } from '../message-reader.js';

export function readCopyFail(payload: Buffer): string {
  const reader = new MessageReader(payload, 'CopyFail');
  return reader.cstring();
}
