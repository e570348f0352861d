// ParameterDescription ('t'): the type OID of each parameter of a prepared statement.

import { typeOid, type DataType } from '../../sql/types.js';
import type { MessageWriter } from '../message-writer.js';

export function writeParameterDescription(writer: MessageWriter, parameterTypes: readonly DataType[]): void {
  writer.begin('t').int16(parameterTypes.length);
  for (const type of parameterTypes) writer.int32(typeOid(type));
  writer.end();
}
