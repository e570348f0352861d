// SCRAM-SHA-256 verifiers as PostgreSQL stores them in pg_authid.rolpassword:
// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64 parts). A role's password
// is kept only as its verifier; the server side of the exchange (pgwire/scram.ts) reads it back.
// SCRAM's primitives (H, HMAC, SaltedPassword) are here too, for the client side (scram-client.ts).

import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/** PostgreSQL's default scram_iterations. */
export const SCRAM_ITERATIONS = 4096;

export interface ScramVerifier {
  readonly salt: Buffer;
  readonly iterations: number;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

/** A Buffer where the node typings ask for a Uint8Array. */
export function bytes(buffer: Buffer): Uint8Array {
  return buffer as unknown as Uint8Array;
}

/** HMAC-SHA-256 of a text (SCRAM's HMAC). */
export function hmac(key: Buffer, text: string): Buffer {
  return createHmac('sha256', bytes(key)).update(text).digest();
}

/** SHA-256 (SCRAM's H). */
export function sha256(data: Buffer): Buffer {
  return createHash('sha256').update(bytes(data)).digest();
}

/** SCRAM's SaltedPassword: Hi(Normalize(password), salt, i), PBKDF2 with HMAC-SHA-256. */
export function saltedPassword(password: string, salt: Buffer, iterations: number): Buffer {
  // PostgreSQL applies SASLprep to the password; for ASCII passwords (the common case) it is the
  // identity, and a password that SASLprep rejects is used as raw bytes, as PostgreSQL also does.
  return pbkdf2Sync(password.normalize('NFKC'), bytes(salt), iterations, 32, 'sha256');
}

/** The verifier of a password (a random 16-byte salt unless given). */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): ScramVerifier {
  const salted = saltedPassword(password, salt, iterations);
  return {
    salt,
    iterations,
    storedKey: sha256(hmac(salted, 'Client Key')),
    serverKey: hmac(salted, 'Server Key'),
  };
}

export function formatScramVerifier(verifier: ScramVerifier): string {
  return `SCRAM-SHA-256$${verifier.iterations}:${verifier.salt.toString('base64')}$${verifier.storedKey.toString('base64')}:${verifier.serverKey.toString('base64')}`;
}

const VERIFIER = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/;

/** The verifier a stored text holds, or undefined when the text is not one (PostgreSQL's parse_scram_secret). */
export function parseScramVerifier(text: string): ScramVerifier | undefined {
  const match = VERIFIER.exec(text);
  if (match === null) return undefined;
  const iterations = Number(match[1]);
  const salt = Buffer.from(match[2]!, 'base64');
  const storedKey = Buffer.from(match[3]!, 'base64');
  const serverKey = Buffer.from(match[4]!, 'base64');
  if (!Number.isSafeInteger(iterations) || iterations < 1 || salt.length === 0 || storedKey.length !== 32 || serverKey.length !== 32) return undefined;
  return { salt, iterations, storedKey, serverKey };
}
