// The authentication of a session a cluster's standby forwards to the leader (pgwire/forward.ts as
// the client, pgwire/auth.ts as the server, over the engine double): the node-to-node password of
// the user (the engine's peerVerifier) is proved by SCRAM-SHA-256 and a wrong one gets 28P01; an
// engine without peer verifiers (not a leader) refuses with 57P03, tried again until the deadline; a session the standby trusted is
// refused when this server would have asked that user for a password, accepted when it would trust
// it too; the forwarding parameter never reaches the session; no server listening is 57P03 after
// the forwarding deadline; a leader with a certificate gets them inside TLS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoginRole, WriteForwarding } from '../../executor/engine/engine.js';
import { LeaderLink, type ForwardedStartup } from '../../pgwire/forward.js';
import { PgServer } from '../../pgwire/server.js';
import { SqlError } from '../../sql/errors.js';
import { formatScramVerifier, scramVerifier } from '../../sql/scram-verifier.js';
import { EngineDouble } from './engine-double.js';
import { freePort } from '../support/free-port.js';
import { makeTestCertificate, type TestCertificate } from '../support/tls-certificate.js';
import { loadTlsSettings } from '../../pgwire/tls.js';

class LeaderDouble extends EngineDouble {
  readonly startups: Record<string, string>[] = [];

  constructor(private readonly peers: boolean) {
    super();
  }

  loginRole(user: string): LoginRole | undefined {
    return user === 'ann' ? { password: formatScramVerifier(scramVerifier('ann pw')) } : user === 'nopass' ? {} : undefined;
  }

  peerVerifier(user: string): string | undefined {
    return this.peers ? formatScramVerifier(scramVerifier(`peer password of ${user}`)) : undefined;
  }

  override openSession(...args: Parameters<EngineDouble['openSession']>): ReturnType<EngineDouble['openSession']> {
    this.startups.push({ ...args[0].options });
    return super.openSession(...args);
  }
}

const servers: PgServer[] = [];
let trusting: { port: number; engine: LeaderDouble };
let secured: { port: number; engine: LeaderDouble };
let noPeers: { port: number; engine: LeaderDouble };

let certificate: TestCertificate;
let tlsRequired: { port: number; engine: LeaderDouble };

async function start(peers: boolean, password?: string, tls = false): Promise<{ port: number; engine: LeaderDouble }> {
  const engine = new LeaderDouble(peers);
  const server = new PgServer({
    engine,
    host: '127.0.0.1',
    port: 0,
    password,
    ...(tls ? { tls: loadTlsSettings({ certFile: certificate.certFile, keyFile: certificate.keyFile, required: true }) } : {}),
  });
  servers.push(server);
  return { port: (await server.listen()).port, engine };
}

function route(port: number, password = (user: string) => `peer password of ${user}`, timeoutMs = 2000): WriteForwarding {
  return { leaderAddress: () => `127.0.0.1:${port}`, peerPassword: password, timeoutMs, sessionSettings: () => [] };
}

function startup(user: string, authenticatedBy: 'password' | 'trust'): ForwardedStartup {
  return { user, database: 'oxbow', options: { application_name: 'app' }, authenticatedBy };
}

async function refusal(promise: Promise<LeaderLink>): Promise<{ code: string; message: string }> {
  try {
    (await promise).close();
  } catch (error) {
    expect(error).toBeInstanceOf(SqlError);
    return { code: (error as SqlError).code, message: (error as SqlError).message };
  }
  throw new Error('the forwarded session was accepted');
}

beforeAll(async () => {
  trusting = await start(true);
  secured = await start(true, 'server pw');
  noPeers = await start(false);
  certificate = makeTestCertificate();
  tlsRequired = await start(true, 'server pw', true);
});

afterAll(async () => {
  for (const server of servers) await server.close();
  certificate?.remove();
});

describe('forwarded sessions', () => {
  it('prove the peer password of their user, and a wrong one is 28P01', async () => {
    const link = await LeaderLink.open(route(secured.port), startup('ann', 'password'));
    link.close();
    expect(secured.engine.startups.at(-1)).toEqual({ application_name: 'app' });
    expect(await refusal(LeaderLink.open(route(secured.port, () => 'guessed'), startup('ann', 'password')))).toEqual({
      code: '28P01',
      message: 'password authentication failed for user "ann"',
    });
    // The password of another user does not do.
    expect((await refusal(LeaderLink.open(route(secured.port, () => 'peer password of nopass'), startup('ann', 'password')))).code).toBe('28P01');
  });

  it('go inside TLS when the leader has a certificate (a leader under --tls-required accepts them)', async () => {
    const link = await LeaderLink.open(route(tlsRequired.port), startup('ann', 'password'));
    link.close();
    expect(tlsRequired.engine.startups.at(-1)).toEqual({ application_name: 'app' });
  });

  it('are refused by a node that is not a leader, until the deadline', async () => {
    expect(await refusal(LeaderLink.open(route(noPeers.port, undefined, 500), startup('ann', 'password')))).toEqual({
      code: '57P03',
      message: `cannot forward this statement to the cluster's leader: the leader at 127.0.0.1:${noPeers.port} answered: this node does not accept forwarded sessions: it is not the leader of a cluster`,
    });
  });

  it('trusted on the standby: accepted only where this node would trust the user too', async () => {
    (await LeaderLink.open(route(trusting.port), startup('nopass', 'trust'))).close();
    // A role with a password, and any role under --password: the leader would have asked for one.
    expect((await refusal(LeaderLink.open(route(trusting.port), startup('ann', 'trust')))).code).toBe('28000');
    expect((await refusal(LeaderLink.open(route(secured.port), startup('nopass', 'trust')))).message).toMatch(/^user "nopass" was not asked for a password on the standby, and the leader requires one/);
  });

  it('give 57P03 when no leader answers within the deadline', async () => {
    const port = await freePort();
    const started = Date.now();
    const refused = await refusal(LeaderLink.open(route(port, undefined, 600), startup('ann', 'password')));
    expect(refused.code).toBe('57P03');
    expect(refused.message).toMatch(/^cannot forward this statement to the cluster's leader: the leader at 127\.0\.0\.1:\d+ could not be reached/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
