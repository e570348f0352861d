// Authentication of a startup packet's user, as PostgreSQL with `scram-sha-256` in pg_hba.conf
// (and `trust` where no password applies). Which method a user gets:
//
// - a role with a password (its SCRAM-SHA-256 verifier, from the engine's `loginRole`): SCRAM;
// - the server's own user (`oxbow`) without one, when the server has a --password: SCRAM with it;
// - anyone else when the server has a --password: a SCRAM exchange against a random verifier that
//   no proof satisfies (28P01, as PostgreSQL's mock authentication: the answer does not tell
//   whether the role exists);
// - otherwise (no --password: loopback only) trust; the engine then refuses a role that does not
//   exist or cannot log in (28000) when it opens the session.
//
// A session a cluster's standby forwards (pgwire/forward.ts: its startup packet carries
// `oxbow.forwarded_auth`, how the standby authenticated its client) proves the node-to-node
// password of its user (the engine's `peerVerifier`) instead: the client's own password never
// leaves the standby. A session the standby trusted (no password asked) is accepted only when this
// node would trust that user too, so forwarding never admits anyone this node would not.
//
// The exchange itself is scram.ts's; this module only chooses the verifier and moves the SASL
// messages (AuthenticationSASL, SASLInitialResponse, SASLContinue, SASLResponse, SASLFinal).

import type { Engine } from '../executor/engine/engine.js';
import { SqlError, SqlState } from '../sql/errors.js';
import { createHash, randomBytes } from 'node:crypto';
import { parseScramVerifier, SCRAM_ITERATIONS } from '../sql/scram-verifier.js';
import { writeAuthenticationSasl, writeAuthenticationSaslContinue, writeAuthenticationSaslFinal } from './backend/authentication.js';
import type { Frame } from './framer.js';
import { readSaslInitialResponse } from './frontend/sasl-response.js';
import type { MessageWriter } from './message-writer.js';
import { SCRAM_MECHANISM, ScramExchange, type ScramVerifier } from './scram.js';

export interface AuthenticationSettings {
  readonly engine: Engine;
  /** The server's --password verifier, for `user`; undefined: no --password (trust). */
  readonly verifier: ScramVerifier | undefined;
  /** The user the server's --password belongs to (`oxbow`). */
  readonly user: string;
}

/** What authentication needs of the connection: its output and its next frontend message. */
export interface AuthenticationIo {
  readonly writer: MessageWriter;
  flush(): void;
  nextFrame(): Promise<Frame>;
}

/** The verifier `user` must prove, or undefined for trust. */
function verifierFor(user: string, settings: AuthenticationSettings): ScramVerifier | undefined {
  const role = settings.engine.loginRole?.(user);
  if (role?.password !== undefined) return parseScramVerifier(role.password) ?? unsatisfiable(user);
  if (settings.verifier === undefined) return undefined;
  if (user === settings.user) return settings.verifier;
  return unsatisfiable(user);
}

/** Random for each server process: the mock salts below depend on it (PostgreSQL's mock_auth_nonce). */
const MOCK_NONCE = randomBytes(32);

/**
 * A verifier no proof satisfies (random keys), so the exchange runs to its end and fails as a
 * wrong password does. Its salt is the same for every attempt with one user name, as a real
 * role's is (PostgreSQL's scram_mock_salt), so probing twice does not tell an unknown role apart.
 */
function unsatisfiable(user: string): ScramVerifier {
  const salt = createHash('sha256').update(new Uint8Array(MOCK_NONCE)).update(user).digest().subarray(0, 16);
  return { salt, iterations: SCRAM_ITERATIONS, storedKey: randomBytes(32), serverKey: randomBytes(32) };
}

/** How a client proved who it is: a password (SCRAM), or nothing (trust). */
export type AuthenticatedBy = 'password' | 'trust';

/** The startup parameter of a forwarded session (pgwire/forward.ts): how the standby authenticated its client. */
export const FORWARDED_AUTH_PARAMETER = 'oxbow.forwarded_auth';

/**
 * Resolves when `user` is authenticated (the caller then sends AuthenticationOk) with how; throws a
 * FATAL SqlError otherwise. `forwardedAuth`: the startup packet's FORWARDED_AUTH_PARAMETER.
 */
export async function authenticate(io: AuthenticationIo, user: string, settings: AuthenticationSettings, forwardedAuth?: string): Promise<AuthenticatedBy> {
  if (forwardedAuth !== undefined) return authenticatePeer(io, user, settings, forwardedAuth);
  const verifier = verifierFor(user, settings);
  if (verifier === undefined) return 'trust';
  await scramExchange(io, user, verifier);
  return 'password';
}

/** A session forwarded by a standby: the node-to-node password of `user`, and no more trust than this node gives. */
async function authenticatePeer(io: AuthenticationIo, user: string, settings: AuthenticationSettings, forwardedAuth: string): Promise<AuthenticatedBy> {
  const refuse = (message: string): SqlError => new SqlError(SqlState.invalidAuthorizationSpecification, message, { severity: 'FATAL' });
  if (forwardedAuth !== 'password' && forwardedAuth !== 'trust') throw refuse(`invalid value for ${FORWARDED_AUTH_PARAMETER}: "${forwardedAuth}"`);
  const peer = settings.engine.peerVerifier?.(user);
  const verifier = peer === undefined ? undefined : parseScramVerifier(peer);
  // 57P03: a standby that led a moment ago, or leads in a moment; the forwarding node tries again.
  if (verifier === undefined) {
    throw new SqlError(SqlState.cannotConnectNow, 'this node does not accept forwarded sessions: it is not the leader of a cluster', { severity: 'FATAL' });
  }
  // Checked before the exchange, but reported after it: only a node that knows the key learns why.
  const tooTrusting = forwardedAuth === 'trust' && verifierFor(user, settings) !== undefined;
  await scramExchange(io, user, verifier);
  if (tooTrusting) throw refuse(`user "${user}" was not asked for a password on the standby, and the leader requires one: connect to the leader, or give the standby --password`);
  return forwardedAuth;
}

async function scramExchange(io: AuthenticationIo, user: string, verifier: ScramVerifier): Promise<void> {
  writeAuthenticationSasl(io.writer, [SCRAM_MECHANISM]);
  io.flush();
  const exchange = new ScramExchange(verifier, user);
  const first = await io.nextFrame();
  if (first.type !== 'p') throw expectedPassword(first.type);
  const initial = readSaslInitialResponse(first.payload);
  if (initial.mechanism !== SCRAM_MECHANISM) {
    throw new SqlError(SqlState.protocolViolation, 'client selected an invalid SASL authentication mechanism', { severity: 'FATAL' });
  }
  writeAuthenticationSaslContinue(io.writer, exchange.clientFirst(initial.data.toString('utf8')));
  io.flush();
  const final = await io.nextFrame();
  if (final.type !== 'p') throw expectedPassword(final.type);
  writeAuthenticationSaslFinal(io.writer, exchange.clientFinal(final.payload.toString('utf8')));
}

function expectedPassword(type: string): SqlError {
  return new SqlError(SqlState.protocolViolation, `expected SASL response, got message type ${type.charCodeAt(0)}`, { severity: 'FATAL' });
}
