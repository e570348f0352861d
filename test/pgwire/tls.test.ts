// TLS at the protocol level over the engine double: SSLRequest answered 'S' and the startup run
// over node:tls's client (the certificate made by the openssl command line), GSSENCRequest still
// 'N', the session told its TLS version and cipher; bytes sent in the clear after an SSLRequest
// (08P01), garbage instead of a ClientHello, a second SSLRequest inside TLS, and --tls-required's
// refusal of a plaintext startup (28000), each ending that connection only while the server keeps
// serving others; and the start-time checks of the certificate and key files.
import { writeFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cipherBits, loadTlsSettings, TlsConfigurationError } from '../../pgwire/tls.js';
import { makeTestCertificate, type TestCertificate } from '../support/tls-certificate.js';
import { connectReady, startDoubleServer, types, type DoubleServer } from './harness.js';
import { fields, int32, RawClient } from './raw-client.js';

let certificate: TestCertificate;
let optional: DoubleServer;
let required: DoubleServer;

beforeAll(async () => {
  certificate = makeTestCertificate();
  const files = { certFile: certificate.certFile, keyFile: certificate.keyFile };
  optional = await startDoubleServer({ tls: loadTlsSettings({ ...files, required: false }) });
  required = await startDoubleServer({ tls: loadTlsSettings({ ...files, required: true }) });
});
afterAll(async () => {
  await optional?.stop();
  await required?.stop();
  certificate?.remove();
});

function tcp(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Reads exactly one byte from a plain socket (the answer to SSLRequest), leaving nothing buffered. */
function oneByte(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      // The server sends nothing more before the client's next bytes, so no byte can be lost.
      socket.off('data', onData);
      if (chunk.length !== 1) reject(new Error(`expected one byte, got ${chunk.length}`));
      else resolve(String.fromCharCode(chunk[0]!));
    };
    socket.on('data', onData);
    socket.once('close', () => reject(new Error('closed before the answer')));
  });
}

/** SSLRequest, 'S', then a TLS handshake with node:tls's client (the self-signed certificate accepted). */
async function tlsClient(port: number): Promise<{ socket: TLSSocket; client: RawClient }> {
  const raw = await tcp(port);
  raw.write(serialize.requestSsl());
  expect(await oneByte(raw)).toBe('S');
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const secure = connectTls({ socket: raw, rejectUnauthorized: false, servername: 'localhost' }, () => resolve(secure));
    secure.once('error', reject);
  });
  return { socket, client: RawClient.over(socket) };
}

function waitForNoConnections(server: DoubleServer): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 5000;
    const check = (): void => {
      if (server.server.connectionCount === 0) resolve();
      else if (Date.now() > deadline) reject(new Error(`${server.server.connectionCount} connections still open`));
      else setTimeout(check, 20);
    };
    check();
  });
}

describe('TLS negotiation', () => {
  it("answers SSLRequest with 'S' and runs the startup and queries over TLS", async () => {
    const { socket, client } = await tlsClient(optional.port);
    expect(socket.getProtocol()).toMatch(/^TLSv1\.[23]$/);
    // The server presents the certificate openssl made.
    expect(socket.getPeerCertificate().subject.CN).toBe('localhost');
    client.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
    const startup = await client.readUntil('Z');
    expect(startup[0]!.type).toBe('R');
    const session = optional.engine.openSessions().at(-1)!;
    expect(session.startup.ssl).toEqual({
      version: socket.getProtocol(),
      cipher: socket.getCipher().name,
      bits: cipherBits(socket.getCipher().name),
      clientDn: null,
      clientSerial: null,
      issuerDn: null,
    });
    client.send(serialize.query('rows 2'));
    expect(types(await client.readUntil('Z'))).toBe('TDDCZ');
    client.end();
  });

  it("answers GSSENCRequest with 'N' and accepts SSLRequest after it (libpq's gssencmode=prefer order)", async () => {
    const raw = await tcp(optional.port);
    raw.write(Buffer.concat([int32(8), int32(80877104)] as unknown as Uint8Array[]));
    expect(await oneByte(raw)).toBe('N');
    raw.write(serialize.requestSsl());
    expect(await oneByte(raw)).toBe('S');
    raw.destroy();
  });

  it('a plaintext startup still works when TLS is optional, and its session has no TLS', async () => {
    const { client } = await connectReady(optional.port);
    expect(optional.engine.openSessions().at(-1)!.startup.ssl).toBeUndefined();
    client.end();
  });

  it('bytes sent in the clear after SSLRequest, before the answer, are refused (08P01) as PostgreSQL refuses them', async () => {
    const client = await RawClient.connect(optional.port);
    client.send(Buffer.concat([serialize.requestSsl(), serialize.startup({ user: 'oxbow', database: 'oxbow' })] as unknown as Uint8Array[]));
    const messages = await client.readToEnd();
    expect(messages.map((m) => m.type)).toEqual(['E']);
    const error = fields(messages[0]!);
    expect([error.get('S'), error.get('C'), error.get('M')]).toEqual(['FATAL', '08P01', 'received unencrypted data after SSL request']);
  });

  it('garbage instead of a ClientHello closes that connection; the server keeps serving others', async () => {
    const before = optional.engine.openSessions().length;
    const raw = await tcp(optional.port);
    raw.write(serialize.requestSsl());
    expect(await oneByte(raw)).toBe('S');
    const closed = new Promise<void>((resolve) => raw.once('close', () => resolve()));
    raw.on('error', () => undefined);
    raw.write('GET / HTTP/1.1\r\nHost: oxbow\r\n\r\n' + 'x'.repeat(512));
    await closed;
    // A truncated ClientHello followed by a close, too.
    const second = await tcp(optional.port);
    second.write(serialize.requestSsl());
    expect(await oneByte(second)).toBe('S');
    second.on('error', () => undefined);
    second.end(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
    await new Promise<void>((resolve) => second.once('close', () => resolve()));
    await waitForNoConnections(optional);
    expect(optional.engine.openSessions().length).toBe(before);
    const { client } = await tlsClient(optional.port);
    client.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
    expect((await client.readUntil('Z')).at(-1)!.type).toBe('Z');
    client.end();
  });

  it('a client that stops after the S is closed at the authentication timeout', async () => {
    const impatient = await startDoubleServer({ tls: loadTlsSettings({ certFile: certificate.certFile, keyFile: certificate.keyFile, required: false }), authenticationTimeoutMs: 300 });
    try {
      const raw = await tcp(impatient.port);
      raw.write(serialize.requestSsl());
      expect(await oneByte(raw)).toBe('S');
      raw.on('error', () => undefined);
      await new Promise<void>((resolve) => raw.once('close', () => resolve()));
      await waitForNoConnections(impatient);
    } finally {
      await impatient.stop();
    }
  });

  it('a second SSLRequest inside TLS is FATAL, as PostgreSQL reads its code as a protocol version', async () => {
    const { client } = await tlsClient(optional.port);
    client.send(serialize.requestSsl());
    const messages = await client.readToEnd();
    expect(messages.map((m) => m.type)).toEqual(['E']);
    const error = fields(messages[0]!);
    expect([error.get('S'), error.get('C'), error.get('M')]).toEqual(['FATAL', '0A000', 'unsupported frontend protocol 1234.5679: server supports 3.0 to 3.0']);
  });
});

describe('--tls-required', () => {
  it('refuses a plaintext startup with FATAL 28000 before authentication, opening no session', async () => {
    const before = required.engine.openSessions().length;
    const client = await RawClient.connect(required.port);
    client.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
    const messages = await client.readToEnd();
    expect(messages.map((m) => m.type)).toEqual(['E']);
    const error = fields(messages[0]!);
    expect([error.get('S'), error.get('C')]).toEqual(['FATAL', '28000']);
    expect(error.get('M')).toBe('connection refused for host "127.0.0.1", user "oxbow", database "oxbow", no encryption: this server requires TLS');
    expect(error.get('H')).toContain('sslmode=require');
    expect(required.engine.openSessions().length).toBe(before);
  });

  it('serves a client that negotiated TLS', async () => {
    const { client } = await tlsClient(required.port);
    client.send(serialize.startup({ user: 'oxbow', database: 'oxbow' }));
    expect((await client.readUntil('Z')).at(-1)!.type).toBe('Z');
    expect(required.engine.openSessions().at(-1)!.startup.ssl?.version).toMatch(/^TLSv1\.[23]$/);
    client.end();
  });
});

describe('the certificate and key files', () => {
  function failure(files: { certFile: string; keyFile: string }): string {
    try {
      loadTlsSettings({ ...files, required: false });
    } catch (error) {
      expect(error).toBeInstanceOf(TlsConfigurationError);
      return (error as Error).message;
    }
    throw new Error('expected the files to be refused');
  }

  it('names the file that cannot be read, is not PEM, or does not match', () => {
    const missing = join(certificate.dir, 'missing.crt');
    expect(failure({ certFile: missing, keyFile: certificate.keyFile })).toMatch(new RegExp(`^could not read TLS certificate file "${missing}": ENOENT`));
    expect(failure({ certFile: certificate.certFile, keyFile: missing })).toMatch(new RegExp(`^could not read TLS private key file "${missing}": ENOENT`));
    const garbage = join(certificate.dir, 'garbage.pem');
    writeFileSync(garbage, 'not a certificate\n');
    expect(failure({ certFile: garbage, keyFile: certificate.keyFile })).toMatch(new RegExp(`^TLS certificate file "${garbage}" holds no PEM certificate`));
    expect(failure({ certFile: certificate.certFile, keyFile: garbage })).toMatch(new RegExp(`^TLS private key file "${garbage}" holds no usable unencrypted PEM private key`));
    expect(failure({ certFile: certificate.certFile, keyFile: certificate.otherKeyFile })).toBe(
      `TLS private key file "${certificate.otherKeyFile}" does not match the certificate in "${certificate.certFile}"`,
    );
  });

  it("reads the cipher's key size from its OpenSSL name", () => {
    expect(cipherBits('TLS_AES_256_GCM_SHA384')).toBe(256);
    expect(cipherBits('TLS_AES_128_GCM_SHA256')).toBe(128);
    expect(cipherBits('TLS_CHACHA20_POLY1305_SHA256')).toBe(256);
    expect(cipherBits('ECDHE-RSA-AES128-GCM-SHA256')).toBe(128);
    expect(cipherBits('ECDHE-RSA-AES256-GCM-SHA384')).toBe(256);
    expect(cipherBits('SOMETHING-ELSE')).toBeNull();
  });
});
