// What a connection's TLS says about itself (`ConnectionSsl`, filled in by pgwire at startup) and
// the functions of PostgreSQL's sslinfo extension that read it: ssl_is_used(), ssl_version(),
// ssl_cipher(), as sslinfo answers them (NULL for version and cipher over a plaintext connection).
// pg_stat_ssl shows the same record for every session (executor/metrics/ssl-relation.ts).

import { type } from '../../sql/types.js';
import type { Overload } from './session-functions.js';

/** A TLS connection's parameters, as pg_stat_ssl's columns. */
export interface ConnectionSsl {
  /** The protocol version, as OpenSSL names it: `TLSv1.3`. */
  readonly version: string;
  /** The cipher, as OpenSSL names it: `TLS_AES_256_GCM_SHA384`. */
  readonly cipher: string;
  /** The cipher's key size in bits. */
  readonly bits: number | null;
  /** The client certificate's subject, serial and issuer (null: no client certificate). */
  readonly clientDn: string | null;
  readonly clientSerial: bigint | null;
  readonly issuerDn: string | null;
}

const text = type('text');
const bool = type('bool');

export const sslFunctions: Readonly<Record<string, readonly Overload[]>> = {
  ssl_is_used: [{ arguments: [], returns: bool, strict: false, impl: (_args, context) => context.ssl !== undefined }],
  ssl_version: [{ arguments: [], returns: text, strict: false, impl: (_args, context) => context.ssl?.version ?? null }],
  ssl_cipher: [{ arguments: [], returns: text, strict: false, impl: (_args, context) => context.ssl?.cipher ?? null }],
};
