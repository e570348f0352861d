// pg_catalog.pg_stat_ssl: one row per session with what its connection's TLS says, PostgreSQL 15's
// columns in its order and types (ssl false and the rest NULL over a plaintext connection; the
// client certificate's columns NULL while client certificates are not requested). The record is
// the session's (`SessionActivity.ssl`, filled in by pgwire at startup: system/ssl-functions.ts).

import { Numeric } from '../../sql/numeric.js';
import type { Row } from '../../sql/value.js';
import type { SystemTable } from '../system/pg-catalog.js';
import { systemRelation } from '../system/system-columns.js';
import type { StatusSystemContext } from './status-relations.js';

/** Next to pg_stat_activity (status-relations.ts). */
export const PG_STAT_SSL_RELATION_ID = 13308;

export const pgStatSslTable: SystemTable<StatusSystemContext> = {
  def: systemRelation(PG_STAT_SSL_RELATION_ID, 'pg_catalog', 'pg_stat_ssl', [
    'pid:int4',
    'ssl:bool',
    'version:text',
    'cipher:text',
    'bits:int4',
    'client_dn:text',
    'client_serial:numeric',
    'issuer_dn:text',
  ]),
  rows: (context) =>
    (context.status?.sessions() ?? []).map((session): Row => {
      const ssl = session.ssl;
      if (ssl === null) return [session.pid, false, null, null, null, null, null, null];
      return [session.pid, true, ssl.version, ssl.cipher, ssl.bits, ssl.clientDn, ssl.clientSerial === null ? null : Numeric.fromBigInt(ssl.clientSerial), ssl.issuerDn];
    }),
};
