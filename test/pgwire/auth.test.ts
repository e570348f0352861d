// Authentication against the roles the engine knows (pgwire/auth.ts), over the engine double with
// a role table: a role with a stored SCRAM-SHA-256 verifier logs in with its password through the
// real `pg` driver's SCRAM client and is refused with a wrong one (28P01); without --password a
// role without one is trusted; with --password, the server's user keeps it, and an unknown role
// goes through a whole SASL exchange before its 28P01 (the answer does not reveal it is unknown).
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoginRole } from '../../executor/engine/engine.js';
import { PgServer } from '../../pgwire/server.js';
import { formatScramVerifier, parseScramVerifier, scramVerifier } from '../../sql/scram-verifier.js';
import { EngineDouble } from './engine-double.js';
import { fields, RawClient } from './raw-client.js';

class EngineWithRoles extends EngineDouble {
  constructor(private readonly roles: ReadonlyMap<string, LoginRole>) {
    super();
  }

  loginRole(user: string): LoginRole | undefined {
    return this.roles.get(user);
  }
}

const roles = new Map<string, LoginRole>([
  ['oxbow', {}],
  ['ann', { password: formatScramVerifier(scramVerifier('ann pw')) }],
  ['nopass', {}],
]);

const servers: PgServer[] = [];
let trustPort = 0;
let securedPort = 0;

async function start(password?: string): Promise<number> {
  const server = new PgServer({ engine: new EngineWithRoles(roles), host: '127.0.0.1', port: 0, password });
  servers.push(server);
  return (await server.listen()).port;
}

async function login(port: number, user: string, password?: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user, database: 'oxbow', ...(password === undefined ? {} : { password }) });
  await client.connect();
  await client.end();
}

beforeAll(async () => {
  trustPort = await start();
  securedPort = await start('s3cret pass');
});

afterAll(async () => {
  for (const server of servers) await server.close();
});

describe('role authentication', () => {
  it('stores verifiers in PostgreSQL text form and reads them back', () => {
    const verifier = scramVerifier('pencil', Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'), 4096);
    const text = formatScramVerifier(verifier);
    expect(text).toMatch(/^SCRAM-SHA-256\$4096:W22ZaJ0SNY7soEsUEjb6gQ==\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$/);
    expect(parseScramVerifier(text)).toEqual(verifier);
    expect(parseScramVerifier('md5abc')).toBeUndefined();
    expect(parseScramVerifier('SCRAM-SHA-256$4096:c2FsdA==$c2hvcnQ=:c2hvcnQ=')).toBeUndefined();
  });

  it('logs a role with a password in with SCRAM-SHA-256 and refuses a wrong one', async () => {
    await login(trustPort, 'ann', 'ann pw');
    await expect(login(trustPort, 'ann', 'other')).rejects.toMatchObject({ code: '28P01', message: 'password authentication failed for user "ann"' });
  });

  it('trusts a role without a password when the server has no --password', async () => {
    await login(trustPort, 'nopass');
    await login(trustPort, 'oxbow');
  });

  it('with --password: the server user keeps it, a role uses its own, the rest fail with 28P01', async () => {
    await login(securedPort, 'oxbow', 's3cret pass');
    await login(securedPort, 'ann', 'ann pw');
    await expect(login(securedPort, 'ann', 's3cret pass')).rejects.toMatchObject({ code: '28P01' });
    await expect(login(securedPort, 'nopass', 's3cret pass')).rejects.toMatchObject({ code: '28P01', message: 'password authentication failed for user "nopass"' });
    await expect(login(securedPort, 'ghost', 's3cret pass')).rejects.toMatchObject({ code: '28P01', message: 'password authentication failed for user "ghost"' });
  });

  it('asks an unknown role for SCRAM as it asks a known one', async () => {
    const client = await RawClient.connect(securedPort);
    client.send(serialize.startup({ user: 'ghost', database: 'oxbow' }));
    const request = await client.readMessage();
    expect(request.type).toBe('R');
    expect(request.payload.readInt32BE(0)).toBe(10);
    client.send(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', 'n,,n=,r=abcdefghijkl'));
    const next = await client.readMessage();
    expect(next.type).toBe('R');
    expect(next.payload.readInt32BE(0)).toBe(11);
    client.send(serialize.sendSCRAMClientFinalMessage(`c=biws,r=${/r=([^,]+)/.exec(next.payload.subarray(4).toString())![1]},p=${Buffer.alloc(32).toString('base64')}`));
    const [error] = await client.readToEnd();
    expect(fields(error!).get('C')).toBe('28P01');
  });

  it('offers an unknown role the same salt on every attempt, as a known role gets its own', async () => {
    const salt = async (user: string) => {
      const client = await RawClient.connect(securedPort);
      client.send(serialize.startup({ user, database: 'oxbow' }));
      await client.readMessage();
      client.send(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', 'n,,n=,r=abcdefghijkl'));
      const next = await client.readMessage();
      client.end();
      return /s=([^,]+)/.exec(next.payload.subarray(4).toString())![1];
    };
    expect(await salt('ghost')).toBe(await salt('ghost'));
    expect(await salt('ghost')).not.toBe(await salt('phantom'));
    expect(await salt('ann')).toBe(parseScramVerifier(roles.get('ann')!.password!)!.salt.toString('base64'));
  });
});
