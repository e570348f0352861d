// SCRAM-SHA-256, client side (RFC 5802 and RFC 7677, as libpq speaks it): no channel binding
// (gs2 header `n,,`), the user name left empty in the SCRAM messages (PostgreSQL takes it from the
// startup packet), the password through the same normalisation as the verifier
// (`scram-verifier.ts`). One client is one exchange: client-first, the server's challenge
// (server-first) answered with the client-final message and its proof, then the server's
// signature checked, which proves the server holds the password's verifier.
//
// Both of oxbow's frontends use it: a standby's link to the leader (pgwire/forward.ts) and the
// PostgreSQL CDC connector's connection (executor/connectors/postgres-cdc/pg-client.ts). The
// `*Message` methods give the bodies of the wire protocol's SASLInitialResponse and SASLResponse
// ('p' messages); the string methods give the SCRAM messages themselves.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { SqlError, SqlState } from './errors.js';
import { bytes, hmac, saltedPassword, sha256 } from './scram-verifier.js';

export const SCRAM_SHA_256 = 'SCRAM-SHA-256';

export interface ScramClientOptions {
  /** The `n=` attribute of client-first (empty unless given, as libpq sends it). */
  readonly user?: string;
  /** The client nonce; random (18 bytes, base64) unless given, which only tests do. */
  readonly nonce?: string;
}

export class ScramClient {
  private readonly nonce: string;
  private readonly clientFirstBare: string;
  private serverSignature: Buffer | undefined;

  constructor(
    private readonly password: string,
    options: ScramClientOptions = {},
  ) {
    this.nonce = options.nonce ?? randomBytes(18).toString('base64');
    this.clientFirstBare = `n=${saslName(options.user ?? '')},r=${this.nonce}`;
  }

  /** The client-first message. */
  clientFirst(): string {
    return `n,,${this.clientFirstBare}`;
  }

  /**
   * The client-final message (with the proof) answering the server-first message; 08P01 when the
   * challenge is malformed or its nonce does not extend the client's.
   */
  clientFinal(serverFirst: string): string {
    const attributes = new Map<string, string>();
    for (const part of serverFirst.split(',')) {
      if (part.length < 2 || part[1] !== '=') throw invalid(`the server-first message has an invalid attribute "${part}"`);
      attributes.set(part[0]!, part.slice(2));
    }
    if (attributes.has('m')) throw invalid('the server asks for a SCRAM extension');
    const serverNonce = attributes.get('r') ?? '';
    const salt = Buffer.from(attributes.get('s') ?? '', 'base64');
    const iterationsText = attributes.get('i') ?? '';
    const iterations = Number(iterationsText);
    if (serverNonce.length <= this.nonce.length || !serverNonce.startsWith(this.nonce)) throw invalid("the server nonce does not extend the client's");
    if (!/^[1-9]\d*$/.test(iterationsText) || !Number.isSafeInteger(iterations)) throw invalid(`the iteration count "${iterationsText}" is not a positive number`);
    if (salt.length === 0) throw invalid('the salt is missing');
    const salted = saltedPassword(this.password, salt, iterations);
    const clientKey = hmac(salted, 'Client Key');
    const withoutProof = `c=biws,r=${serverNonce}`;
    const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`;
    const clientSignature = hmac(sha256(clientKey), authMessage);
    const proof = Buffer.allocUnsafe(clientKey.length);
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ clientSignature[i]!;
    this.serverSignature = hmac(hmac(salted, 'Server Key'), authMessage);
    return `${withoutProof},p=${proof.toString('base64')}`;
  }

  /** Whether the server-final message carries the server signature the password gives (false before clientFinal). */
  verifyServerFinal(serverFinal: string): boolean {
    if (this.serverSignature === undefined || !serverFinal.startsWith('v=')) return false;
    const given = Buffer.from(serverFinal.slice(2), 'base64');
    return given.length === this.serverSignature.length && timingSafeEqual(bytes(given), bytes(this.serverSignature));
  }

  /** SASLInitialResponse's body: the mechanism, then client-first with its length. */
  initialResponseMessage(): Buffer {
    const first = Buffer.from(this.clientFirst(), 'utf8');
    const body = Buffer.allocUnsafe(SCRAM_SHA_256.length + 1 + 4 + first.length);
    let at = body.write(SCRAM_SHA_256, 0, 'latin1');
    body[at++] = 0;
    at = body.writeInt32BE(first.length, at);
    first.copy(bytes(body), at);
    return body;
  }

  /** SASLResponse's body: client-final, answering AuthenticationSASLContinue's data (server-first). */
  responseMessage(serverFirst: Buffer): Buffer {
    return Buffer.from(this.clientFinal(serverFirst.toString('utf8')), 'utf8');
  }
}

/** The mechanisms an AuthenticationSASL message's data (after its code) lists. */
export function saslMechanisms(data: Buffer): string[] {
  return data
    .toString('utf8')
    .split('\0')
    .filter((name) => name.length > 0);
}

/** RFC 5802's saslname: `,` and `=` escaped. */
function saslName(name: string): string {
  return name.replace(/=/g, '=3D').replace(/,/g, '=2C');
}

function invalid(detail: string): SqlError {
  return new SqlError(SqlState.protocolViolation, 'invalid SCRAM challenge', { detail });
}
