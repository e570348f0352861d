// ParameterStatus ('S'): a reported run-time parameter and its value.

import type { MessageWriter } from '../message-writer.js';

export function writeParameterStatus(writer: MessageWriter, name: string, value: string): void {
  writer.begin('S').cstring(name).cstring(value).end();
}
