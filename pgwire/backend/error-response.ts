// ErrorResponse ('E') and NoticeResponse ('N'): the same field list. oxbow sends S (severity),
// V (severity, never localized), C (SQLSTATE), M (message), D (detail), H (hint), P (1-based
// position in the statement), W (context) and R (routine, where a client acts on it) when present,
// as PostgreSQL does.

import type { MessageWriter } from '../message-writer.js';

export interface ReportFields {
  readonly severity: string;
  readonly code: string;
  readonly message: string;
  readonly detail?: string | undefined;
  readonly hint?: string | undefined;
  readonly position?: number | undefined;
  /** PostgreSQL's CONTEXT (where it happened, e.g. a COPY line). */
  readonly context?: string | undefined;
  /** PostgreSQL's routine (postgres.js re-prepares a statement on `RevalidateCachedQuery`). */
  readonly routine?: string | undefined;
}

export function writeErrorResponse(writer: MessageWriter, fields: ReportFields): void {
  writeFields(writer, 'E', fields);
}

export function writeNoticeResponse(writer: MessageWriter, fields: ReportFields): void {
  writeFields(writer, 'N', fields);
}

function writeFields(writer: MessageWriter, type: string, fields: ReportFields): void {
  writer.begin(type);
  writer.int8(0x53).cstring(fields.severity); // S
  writer.int8(0x56).cstring(fields.severity); // V
  writer.int8(0x43).cstring(fields.code); // C
  writer.int8(0x4d).cstring(fields.message); // M
  if (fields.detail !== undefined) writer.int8(0x44).cstring(fields.detail); // D
  if (fields.hint !== undefined) writer.int8(0x48).cstring(fields.hint); // H
  if (fields.position !== undefined) writer.int8(0x50).cstring(String(fields.position)); // P
  if (fields.context !== undefined) writer.int8(0x57).cstring(fields.context); // W
  if (fields.routine !== undefined) writer.int8(0x52).cstring(fields.routine); // R
  writer.int8(0);
  writer.end();
}
