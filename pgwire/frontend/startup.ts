// The first packet of a connection: StartupMessage (protocol 3.x with its parameters),
// SSLRequest, GSSENCRequest or CancelRequest. They are told apart by the int32 after the length.

import { SqlError, SqlState } from '../../sql/errors.js';
import { MessageReader } from '../message-reader.js';

export const SSL_REQUEST_CODE = 80877103;
export const GSSENC_REQUEST_CODE = 80877104;
export const CANCEL_REQUEST_CODE = 80877102;

export type StartupPacket =
  | { readonly kind: 'startup'; readonly majorVersion: number; readonly minorVersion: number; readonly parameters: Map<string, string> }
  | { readonly kind: 'ssl' }
  | { readonly kind: 'gssenc' }
  | { readonly kind: 'cancel'; readonly processId: number; readonly secretKey: number };

export function readStartupPacket(payload: Buffer): StartupPacket {
  const reader = new MessageReader(payload, 'startup');
  const code = reader.int32();
  if (code === SSL_REQUEST_CODE) return { kind: 'ssl' };
  if (code === GSSENC_REQUEST_CODE) return { kind: 'gssenc' };
  if (code === CANCEL_REQUEST_CODE) {
    const processId = reader.int32();
    const secretKey = reader.int32();
    return { kind: 'cancel', processId, secretKey };
  }
  const majorVersion = code >>> 16;
  const minorVersion = code & 0xffff;
  if (majorVersion !== 3) {
    throw new SqlError(
      SqlState.featureNotSupported,
      `unsupported frontend protocol ${majorVersion}.${minorVersion}: server supports 3.0 to 3.0`,
      { severity: 'FATAL' },
    );
  }
  const parameters = new Map<string, string>();
  for (;;) {
    const name = reader.cstring();
    if (name === '') break;
    parameters.set(name, reader.cstring());
  }
  return { kind: 'startup', majorVersion, minorVersion, parameters };
}
