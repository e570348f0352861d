// Authentication ('R') requests: Ok, SASL (the mechanism list), SASLContinue and SASLFinal.

import type { MessageWriter } from '../message-writer.js';

export function writeAuthenticationOk(writer: MessageWriter): void {
  writer.begin('R').int32(0).end();
}

export function writeAuthenticationSasl(writer: MessageWriter, mechanisms: readonly string[]): void {
  writer.begin('R').int32(10);
  for (const mechanism of mechanisms) writer.cstring(mechanism);
  writer.int8(0).end();
}

export function writeAuthenticationSaslContinue(writer: MessageWriter, data: string): void {
  writer.begin('R').int32(11).text(data).end();
}

export function writeAuthenticationSaslFinal(writer: MessageWriter, data: string): void {
  writer.begin('R').int32(12).text(data).end();
}
