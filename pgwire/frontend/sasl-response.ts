// The 'p' message during SCRAM: SASLInitialResponse (mechanism name and the client-first message)
// and SASLResponse (the client-final message: the raw payload, read where it is used). Which one
// it is depends on the exchange's state.

import { MessageReader } from '../message-reader.js';

export interface SaslInitialResponse {
  readonly mechanism: string;
  readonly data: Buffer;
}

export function readSaslInitialResponse(payload: Buffer): SaslInitialResponse {
  const reader = new MessageReader(payload, 'SASLInitialResponse');
  const mechanism = reader.cstring();
  const length = reader.int32();
  const data = length < 0 ? Buffer.alloc(0) : reader.bytes(length);
  reader.expectEnd();
  return { mechanism, data };
}
