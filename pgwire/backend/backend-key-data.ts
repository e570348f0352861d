// BackendKeyData ('K'): the process id and secret key a client sends back in a CancelRequest.

import type { MessageWriter } from '../message-writer.js';

export function writeBackendKeyData(writer: MessageWriter, processId: number, secretKey: number): void {
  writer.begin('K').int32(processId).int32(secretKey).end();
}
