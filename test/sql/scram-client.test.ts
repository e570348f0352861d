// The client side of SCRAM-SHA-256 (sql/scram-client.ts): RFC 7677's worked example (section 3,
// user "user", password "pencil") byte for byte, a proof that the verifier of sql/scram-verifier.ts
// accepts (ClientKey recovered from the proof hashes to StoredKey), a whole exchange against the
// server side (pgwire/scram.ts), and the challenges and signatures it refuses.
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ScramClient, saslMechanisms } from '../../sql/scram-client.js';
import { scramVerifier } from '../../sql/scram-verifier.js';
import { ScramExchange } from '../../pgwire/scram.js';
import { RFC7677 } from '../support/scram-rfc7677.js';

const { clientNonce, serverFirst, clientFinal, serverFinal } = RFC7677;

describe('ScramClient', () => {
  it("writes RFC 7677's client messages and accepts its server signature", () => {
    const client = new ScramClient('pencil', { user: 'user', nonce: clientNonce });
    expect(client.clientFirst()).toBe(RFC7677.clientFirst);
    expect(client.clientFinal(serverFirst)).toBe(clientFinal);
    expect(client.verifyServerFinal(serverFinal)).toBe(true);
  });

  it('gives a proof the stored verifier accepts, and not the verifier of another password', () => {
    const salt = Buffer.from('c2FsdHNhbHRzYWx0', 'base64');
    const client = new ScramClient('s3cret', { nonce: 'abc' });
    const first = `r=abcXYZ,s=${salt.toString('base64')},i=1000`;
    const final = client.clientFinal(first);
    const withoutProof = final.slice(0, final.lastIndexOf(',p='));
    const proof = Buffer.from(final.slice(final.lastIndexOf(',p=') + 3), 'base64');
    const authMessage = `n=,r=abc,${first},${withoutProof}`;
    const clientKeyFor = (storedKey: Buffer): Buffer => {
      const signature = createHmac('sha256', storedKey).update(authMessage).digest();
      return Buffer.from(proof.map((byte, i) => byte ^ signature[i]!));
    };
    const right = scramVerifier('s3cret', salt, 1000);
    expect(createHash('sha256').update(clientKeyFor(right.storedKey)).digest().equals(right.storedKey)).toBe(true);
    const wrong = scramVerifier('s3cret!', salt, 1000);
    expect(createHash('sha256').update(clientKeyFor(wrong.storedKey)).digest().equals(wrong.storedKey)).toBe(false);
    expect(client.verifyServerFinal(`v=${createHmac('sha256', right.serverKey).update(authMessage).digest('base64')}`)).toBe(true);
    expect(client.verifyServerFinal(`v=${createHmac('sha256', wrong.serverKey).update(authMessage).digest('base64')}`)).toBe(false);
  });

  it('completes an exchange with the server side', () => {
    const exchange = new ScramExchange(scramVerifier('hunter2'), 'alice');
    const client = new ScramClient('hunter2');
    const final = exchange.clientFinal(client.clientFinal(exchange.clientFirst(client.clientFirst())));
    expect(client.verifyServerFinal(final)).toBe(true);
    const wrong = new ScramClient('hunter3');
    const other = new ScramExchange(scramVerifier('hunter2'), 'alice');
    const answer = wrong.clientFinal(other.clientFirst(wrong.clientFirst()));
    expect(() => other.clientFinal(answer)).toThrow(expect.objectContaining({ code: '28P01' }));
  });

  it('frames SASLInitialResponse and SASLResponse bodies', () => {
    const client = new ScramClient('pencil', { nonce: 'n0nce' });
    const initial = client.initialResponseMessage();
    const first = 'n,,n=,r=n0nce';
    expect(initial.toString('latin1', 0, 14)).toBe('SCRAM-SHA-256\0');
    expect(initial.readInt32BE(14)).toBe(first.length);
    expect(initial.toString('utf8', 18)).toBe(first);
    expect(client.responseMessage(Buffer.from('r=n0nceS,s=c2FsdA==,i=1')).toString('utf8')).toMatch(/^c=biws,r=n0nceS,p=[A-Za-z0-9+/]{43}=$/);
    expect(saslMechanisms(Buffer.from('SCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0\0'))).toEqual(['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256']);
  });

  it('refuses malformed challenges with 08P01 and a signature before the challenge', () => {
    const challenge = (text: string): (() => string) => () => new ScramClient('pencil', { nonce: 'abc' }).clientFinal(text);
    expect(challenge('r=xyzDEF,s=c2FsdA==,i=4096')).toThrow(expect.objectContaining({ code: '08P01', message: 'invalid SCRAM challenge' }));
    expect(challenge('r=abc,s=c2FsdA==,i=4096')).toThrow(expect.objectContaining({ code: '08P01' }));
    expect(challenge('r=abcD,s=,i=4096')).toThrow(expect.objectContaining({ code: '08P01' }));
    expect(challenge('r=abcD,s=c2FsdA==,i=0')).toThrow(expect.objectContaining({ code: '08P01' }));
    expect(challenge('r=abcD,s=c2FsdA==,i=4x')).toThrow(expect.objectContaining({ code: '08P01' }));
    expect(challenge('m=ext,r=abcD,s=c2FsdA==,i=1')).toThrow(expect.objectContaining({ code: '08P01' }));
    expect(challenge('garbage')).toThrow(expect.objectContaining({ code: '08P01' }));
    expect(new ScramClient('pencil').verifyServerFinal(serverFinal)).toBe(false);
    const client = new ScramClient('pencil', { user: 'user', nonce: clientNonce });
    client.clientFinal(serverFirst);
    expect(client.verifyServerFinal('e=invalid-proof')).toBe(false);
    expect(client.verifyServerFinal(serverFinal.slice(0, -4))).toBe(false);
  });
});
