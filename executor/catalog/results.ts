// What a statement answers besides its rows, shared by every layer that answers statements (the
// engine's sessions, DDL, settings): its result columns and its notices.

import type { DataType } from '../../sql/types.js';

export interface ColumnDescription {
  readonly name: string;
  readonly type: DataType;
  /** pg_class OID and attribute number when the column comes straight from a table, else 0. */
  readonly tableOid: number;
  readonly columnNumber: number;
}

export interface Notice {
  readonly severity: 'WARNING' | 'NOTICE' | 'INFO' | 'DEBUG' | 'LOG';
  readonly code: string;
  readonly message: string;
  readonly detail?: string;
  readonly hint?: string;
}
