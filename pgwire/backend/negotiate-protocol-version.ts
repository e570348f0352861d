// NegotiateProtocolVersion ('v'): sent when a client asks for a newer 3.x minor version or for
// protocol options (`_pq_.*`) oxbow does not know; the client then continues with 3.0.

import type { MessageWriter } from '../message-writer.js';

export function writeNegotiateProtocolVersion(writer: MessageWriter, newestMinorVersion: number, unknownOptions: readonly string[]): void {
  writer.begin('v').int32(newestMinorVersion).int32(unknownOptions.length);
  for (const option of unknownOptions) writer.cstring(option);
  writer.end();
}
