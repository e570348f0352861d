// ReadyForQuery ('Z'): the session's transaction status, 'I' idle, 'T' in a transaction block,
// 'E' in a failed transaction block.

import type { TransactionStatus } from '../../executor/engine/engine.js';
import type { MessageWriter } from '../message-writer.js';

const STATUS_BYTE: Record<TransactionStatus, number> = { idle: 0x49, inTransaction: 0x54, failed: 0x45 };

export function writeReadyForQuery(writer: MessageWriter, status: TransactionStatus): void {
  writer.begin('Z').int8(STATUS_BYTE[status]).end();
}
