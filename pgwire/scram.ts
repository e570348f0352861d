// SCRAM-SHA-256, server side (RFC 5802 and RFC 7677, as PostgreSQL implements it): no channel
// binding (only SCRAM-SHA-256 is advertised, never -PLUS, with or without TLS), and the
// user name inside the SCRAM messages is ignored as PostgreSQL does (the startup packet names the
// user).
//
// The verifier (salt, StoredKey, ServerKey) is a role's stored one (`../sql/scram-verifier.ts`) or
// derived once from the server's --password when it starts; no password is kept around.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { hmac, scramVerifier, sha256, type ScramVerifier } from '../sql/scram-verifier.js';
import { SCRAM_SHA_256 } from '../sql/scram-client.js';
import { SqlError, SqlState } from '../sql/errors.js';
import { asBytes } from './node-buffer.js';

export const SCRAM_MECHANISM = SCRAM_SHA_256;

export { scramVerifier, type ScramVerifier };

/** One authentication exchange: client-first, server-first, client-final, server-final. */
export class ScramExchange {
  private clientFirstBare = '';
  private serverFirst = '';
  private nonce = '';
  private channelBindingHeader = '';

  constructor(
    private readonly verifier: ScramVerifier,
    private readonly user: string,
    /** Fixed only by tests (RFC 7677's example); random otherwise. */
    private readonly serverNonce: string = randomBytes(18).toString('base64'),
  ) {}

  /** Takes the client-first message, returns the server-first message. */
  clientFirst(message: string): string {
    // gs2-header: "n,," (no channel binding) or "y,," (client could, but we do not offer it).
    const match = /^([ny]),(a=[^,]*)?,(.*)$/.exec(message);
    if (match === null) {
      if (message.startsWith('p=')) throw malformed('channel binding is not supported by this server');
      throw malformed('the gs2 header is missing or invalid');
    }
    if (match[2] !== undefined) throw malformed('an authorization identity is not supported');
    this.channelBindingHeader = `${match[1]},,`;
    this.clientFirstBare = match[3]!;
    const attributes = parseAttributes(this.clientFirstBare);
    const clientNonce = attributes.get('r');
    if (clientNonce === undefined || clientNonce.length === 0 || !attributes.has('n')) throw malformed('the client nonce or user name attribute is missing');
    this.nonce = clientNonce + this.serverNonce;
    this.serverFirst = `r=${this.nonce},s=${this.verifier.salt.toString('base64')},i=${this.verifier.iterations}`;
    return this.serverFirst;
  }

  /** Takes the client-final message, returns the server-final message; throws 28P01 on a wrong password. */
  clientFinal(message: string): string {
    const proofIndex = message.lastIndexOf(',p=');
    if (proofIndex < 0) throw malformed('the client proof is missing');
    const withoutProof = message.slice(0, proofIndex);
    const attributes = parseAttributes(message);
    const channelBinding = attributes.get('c');
    if (channelBinding !== Buffer.from(this.channelBindingHeader).toString('base64')) throw malformed('unexpected channel binding data');
    if (attributes.get('r') !== this.nonce) throw malformed('the nonce does not match');
    const proof = Buffer.from(attributes.get('p') ?? '', 'base64');
    if (proof.length !== 32) throw malformed('the client proof has the wrong length');
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    const clientSignature = hmac(this.verifier.storedKey, authMessage);
    const clientKey = Buffer.alloc(32);
    for (let i = 0; i < 32; i++) clientKey[i] = proof[i]! ^ clientSignature[i]!;
    const candidate = sha256(clientKey);
    if (!timingSafeEqual(asBytes(candidate), asBytes(this.verifier.storedKey))) {
      throw new SqlError(SqlState.invalidPassword, `password authentication failed for user "${this.user}"`, { severity: 'FATAL' });
    }
    return `v=${hmac(this.verifier.serverKey, authMessage).toString('base64')}`;
  }
}

function parseAttributes(message: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const part of message.split(',')) {
    if (part.length < 2 || part[1] !== '=') throw malformed(`invalid attribute "${part}"`);
    attributes.set(part[0]!, part.slice(2));
  }
  return attributes;
}

function malformed(detail: string): SqlError {
  return new SqlError(SqlState.protocolViolation, 'malformed SCRAM message', { detail, severity: 'FATAL' });
}
