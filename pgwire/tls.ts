// TLS for the wire protocol, as PostgreSQL does it: the client asks with SSLRequest, the server
// answers 'S' and both run a TLS handshake on the same socket (node:tls over the TCP socket), then
// the startup packet follows encrypted. Owns: loading the certificate and key at start (a file
// that cannot be read, is not PEM, or a key that does not match its certificate stops the start
// with a message naming the file), the upgrade of one socket, what a connection's TLS says about
// itself (pg_stat_ssl, ssl_version()...), and the refusal of a plaintext startup under
// `--tls-required` (FATAL 28000, where PostgreSQL's `hostssl`-only pg_hba.conf refuses).

import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import type { ConnectionSsl } from '../executor/engine/engine.js';
import { SqlError, SqlState } from '../sql/errors.js';

export interface TlsSettings {
  readonly secureContext: SecureContext;
  /** Refuse a startup that did not negotiate TLS (28000). */
  readonly required: boolean;
}

export interface TlsFiles {
  /** PEM certificate (its chain may follow it in the same file). */
  readonly certFile: string;
  /** PEM private key, unencrypted. */
  readonly keyFile: string;
  readonly required: boolean;
}

/** A certificate or key that cannot be used: the message names the file and what is wrong. */
export class TlsConfigurationError extends Error {}

/** Reads and checks the certificate and key; throws TlsConfigurationError naming the file at fault. */
export function loadTlsSettings(files: TlsFiles): TlsSettings {
  const certPem = readPem(files.certFile, 'certificate');
  const keyPem = readPem(files.keyFile, 'private key');
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certPem);
  } catch (error) {
    throw new TlsConfigurationError(`TLS certificate file "${files.certFile}" holds no PEM certificate: ${reason(error)}`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch (error) {
    throw new TlsConfigurationError(`TLS private key file "${files.keyFile}" holds no usable unencrypted PEM private key: ${reason(error)}`);
  }
  if (!certificate.checkPrivateKey(key)) {
    throw new TlsConfigurationError(`TLS private key file "${files.keyFile}" does not match the certificate in "${files.certFile}"`);
  }
  let secureContext: SecureContext;
  try {
    secureContext = createSecureContext({ cert: certPem, key: keyPem, minVersion: 'TLSv1.2' });
  } catch (error) {
    throw new TlsConfigurationError(`TLS certificate "${files.certFile}" and key "${files.keyFile}" cannot be used: ${reason(error)}`);
  }
  return { secureContext, required: files.required };
}

function readPem(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new TlsConfigurationError(`could not read TLS ${what} file "${path}": ${reason(error)}`);
  }
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Answers an SSLRequest with 'S' and wraps the socket; the handshake runs as the client's bytes
 * arrive, and the startup packet is read from the returned socket. The caller has moved its
 * listeners off `socket` and checked that nothing was received after the SSLRequest.
 */
export function startTls(socket: Socket, settings: TlsSettings): TLSSocket {
  socket.write('S');
  return new TLSSocket(socket, { isServer: true, secureContext: settings.secureContext });
}

/**
 * What PostgreSQL answers when bytes arrive after an SSLRequest before the server's answer: they
 * were sent in the clear and would be taken as encrypted (a man-in-the-middle could inject them).
 */
export function unencryptedDataAfterSslRequest(): SqlError {
  return new SqlError(SqlState.protocolViolation, 'received unencrypted data after SSL request', {
    severity: 'FATAL',
    detail: 'This could be either a client-software bug or evidence of an attempted man-in-the-middle attack.',
  });
}

/** A second SSLRequest on an encrypted connection: PostgreSQL treats its code as a protocol version. */
export function repeatedSslRequest(): SqlError {
  return new SqlError(SqlState.featureNotSupported, 'unsupported frontend protocol 1234.5679: server supports 3.0 to 3.0', { severity: 'FATAL' });
}

/** `--tls-required` and a plaintext startup: refused before authentication, 28000. */
export function plaintextRefused(parameters: { host: string; user: string; database: string }): SqlError {
  return new SqlError(
    SqlState.invalidAuthorizationSpecification,
    `connection refused for host "${parameters.host}", user "${parameters.user}", database "${parameters.database}", no encryption: this server requires TLS`,
    { severity: 'FATAL', hint: 'Connect with TLS (sslmode=require or stronger); the server runs with --tls-required.' },
  );
}

/** What the session shows of an encrypted connection; undefined for a plaintext one. */
export function connectionSsl(socket: Socket): ConnectionSsl | undefined {
  if (!(socket instanceof TLSSocket)) return undefined;
  const version = socket.getProtocol();
  const cipher = socket.getCipher();
  if (version === null || cipher === undefined) return undefined;
  return { version, cipher: cipher.name, bits: cipherBits(cipher.name), clientDn: null, clientSerial: null, issuerDn: null };
}

/**
 * The cipher's symmetric key size, as PostgreSQL's pg_stat_ssl.bits (OpenSSL's
 * SSL_get_cipher_bits), read from the cipher's name since node:tls does not report it.
 */
export function cipherBits(name: string): number | null {
  const upper = name.toUpperCase();
  if (upper.includes('CHACHA20')) return 256;
  const aes = /AES[_-]?(128|256)/.exec(upper);
  if (aes !== null) return Number(aes[1]);
  if (upper.includes('CAMELLIA256')) return 256;
  if (upper.includes('CAMELLIA128')) return 128;
  return null;
}
