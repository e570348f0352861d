// The project's @types/node (20.9) predates TypeScript 5.7's generic Uint8Array, so a Buffer is
// not assignable to a Uint8Array parameter at compile time although it is one at run time. This
// one cast keeps that type-level mismatch out of the protocol code.

export function asBytes(buffer: Buffer): Uint8Array {
  return buffer as unknown as Uint8Array;
}
