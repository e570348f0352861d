// SCRAM-SHA-256 server side against the worked example of RFC 7677 section 3 (user "user",
// password "pencil"): the server-first and server-final messages must be the RFC's, byte for byte.
import { describe, expect, it } from 'vitest';
import { ScramExchange, scramVerifier } from '../../pgwire/scram.js';
import { RFC7677 } from '../support/scram-rfc7677.js';

const { salt, clientFirst, serverNonce, serverFirst, clientFinal, serverFinal } = RFC7677;

describe('SCRAM-SHA-256 (RFC 7677 example)', () => {
  it('produces the RFC server messages for the right password', () => {
    const exchange = new ScramExchange(scramVerifier('pencil', salt, 4096), 'user', serverNonce);
    expect(exchange.clientFirst(clientFirst)).toBe(serverFirst);
    expect(exchange.clientFinal(clientFinal)).toBe(serverFinal);
  });

  it('refuses the same proof for another password with 28P01', () => {
    const exchange = new ScramExchange(scramVerifier('pencils', salt, 4096), 'user', serverNonce);
    exchange.clientFirst(clientFirst);
    expect(() => exchange.clientFinal(clientFinal)).toThrow(expect.objectContaining({ code: '28P01', message: 'password authentication failed for user "user"' }));
  });

  it('refuses a changed nonce, channel binding and malformed messages with 08P01', () => {
    const exchange = new ScramExchange(scramVerifier('pencil', salt, 4096), 'user', serverNonce);
    exchange.clientFirst(clientFirst);
    expect(() => exchange.clientFinal(clientFinal.replace('r=rOpr', 'r=xOpr'))).toThrow(expect.objectContaining({ code: '08P01' }));
    const fresh = new ScramExchange(scramVerifier('pencil', salt, 4096), 'user', serverNonce);
    expect(() => fresh.clientFirst('p=tls-server-end-point,,n=,r=abc')).toThrow(expect.objectContaining({ code: '08P01' }));
    expect(() => fresh.clientFirst('garbage')).toThrow(expect.objectContaining({ code: '08P01', message: 'malformed SCRAM message' }));
  });
});
