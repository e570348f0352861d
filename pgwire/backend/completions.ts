// The messages without a payload beyond a tag: CommandComplete ('C'), EmptyQueryResponse ('I'),
// ParseComplete ('1'), BindComplete ('2'), CloseComplete ('3'), NoData ('n'), PortalSuspended ('s').
// Kept together: each is one line, a file each would be noise.

import type { MessageWriter } from '../message-writer.js';

export function writeCommandComplete(writer: MessageWriter, tag: string): void {
  writer.begin('C').cstring(tag).end();
}

export function writeEmptyQueryResponse(writer: MessageWriter): void {
  writer.begin('I').end();
}

export function writeParseComplete(writer: MessageWriter): void {
  writer.begin('1').end();
}

export function writeBindComplete(writer: MessageWriter): void {
  writer.begin('2').end();
}

export function writeCloseComplete(writer: MessageWriter): void {
  writer.begin('3').end();
}

export function writeNoData(writer: MessageWriter): void {
  writer.begin('n').end();
}

export function writePortalSuspended(writer: MessageWriter): void {
  writer.begin('s').end();
}
