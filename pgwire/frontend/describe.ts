// Describe ('D') and Close ('C') share a shape: 'S' (statement) or 'P' (portal) and a name.

import { SqlError, SqlState } from '../../sql/errors.js';
import { MessageReader } from '../message-reader.js';

export interface TargetMessage {
  readonly target: 'statement' | 'portal';
  readonly name: string;
}

export function readDescribe(payload: Buffer): TargetMessage {
  return readTarget(payload, 'Describe');
}

export function readClose(payload: Buffer): TargetMessage {
  return readTarget(payload, 'Close');
}

function readTarget(payload: Buffer, messageName: string): TargetMessage {
  const reader = new MessageReader(payload, messageName);
  const kind = reader.byte();
  const name = reader.cstring();
  reader.expectEnd();
  if (kind === 0x53) return { target: 'statement', name };
  if (kind === 0x50) return { target: 'portal', name };
  throw new SqlError(SqlState.protocolViolation, `invalid ${messageName.toUpperCase()} message subtype ${kind}`);
}
