// uuid values: held as PostgreSQL's canonical text (36 lowercase characters, hyphens at 8-4-4-4-12),
// so equality, ordering (code-point order of fixed-width lowercase hex is the byte order
// PostgreSQL uses) and hashing are those of the string. Input accepts PostgreSQL's forms: upper or
// lower case, optional braces, and hyphens after any group of four hex digits.

import { randomBytes } from 'node:crypto';
import { SqlError, SqlState } from './errors.js';

const HEX = '0123456789abcdef';

function invalid(text: string): SqlError {
  return new SqlError(SqlState.invalidTextRepresentation, `invalid input syntax for type uuid: "${text}"`);
}

function isHex(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 97 && code <= 102) || (code >= 65 && code <= 70);
}

/** PostgreSQL's uuid_in: 32 hex digits, `{...}` optional, a hyphen allowed after each group of 4 digits. */
export function parseUuid(text: string): string {
  let start = 0;
  let end = text.length;
  if (text.charCodeAt(0) === 0x7b /* { */) {
    if (text.charCodeAt(end - 1) !== 0x7d) throw invalid(text);
    start = 1;
    end--;
  }
  let digits = '';
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (isHex(code)) {
      digits += text[i];
      continue;
    }
    // A hyphen only after a complete group of four, not first, not last, not doubled.
    if (code === 0x2d && digits.length > 0 && digits.length % 4 === 0 && digits.length < 32 && text.charCodeAt(i - 1) !== 0x2d && i + 1 < end) continue;
    throw invalid(text);
  }
  if (digits.length !== 32) throw invalid(text);
  return canonical(digits.toLowerCase());
}

function canonical(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The 16 bytes of a canonical uuid (binary send, key encoding). */
export function uuidBytes(uuid: string): Uint8Array {
  const bytes = new Uint8Array(16);
  let j = 0;
  for (let i = 0; i < uuid.length; i++) {
    if (uuid.charCodeAt(i) === 0x2d) continue;
    bytes[j >> 1] = (bytes[j >> 1]! << 4) | HEX.indexOf(uuid[i]!);
    j++;
  }
  return bytes;
}

/** The canonical text of 16 bytes (binary receive). */
export function uuidFromBytes(bytes: Uint8Array): string {
  let hex = '';
  for (let i = 0; i < 16; i++) hex += HEX[bytes[i]! >> 4]! + HEX[bytes[i]! & 15]!;
  return canonical(hex);
}

/** A version 4 (random) uuid, as gen_random_uuid(). */
export function randomUuid(): string {
  const bytes = randomBytes(16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return uuidFromBytes(bytes);
}
