// The object-store contract the checkpointer consumes: put a local file or a small byte string
// under a key, read one back (a download verifies size and SHA-256 when the caller knows them),
// list a prefix, delete keys. Every call has a deadline per request and retries what can pass
// (retry.ts). Two real implementations: a local folder (file-object-store.ts)
// and S3 or any S3-compatible server (s3-object-store.ts). Failures are ObjectStoreErrors with a
// code the checkpointer can act on (retry an unavailable store, stop on a permission error, fall
// back on a corrupt object).

import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';

export interface ObjectInfo {
  readonly key: string;
  readonly sizeBytes: number;
}

/** Size and SHA-256 (hex) of what was written or read. */
export interface ObjectDigest {
  readonly sizeBytes: number;
  readonly sha256: string;
}

export interface ObjectStore {
  /** Where objects go, for messages and system tables (no credentials). */
  readonly location: string;
  /** Uploads a local file (multipart when large); returns what was sent. */
  putFile(key: string, path: string): Promise<ObjectDigest>;
  /** Writes a small object (manifests). */
  putBytes(key: string, body: Uint8Array): Promise<ObjectDigest>;
  /** Reads a small object whole; ObjectStoreError NotFound when absent. */
  getBytes(key: string): Promise<Uint8Array>;
  /**
   * Downloads to `path` (written atomically: a temporary name, then rename). With `expected`,
   * a size or checksum mismatch is an ObjectStoreError Corrupt and nothing is left at `path`.
   */
  getFile(key: string, path: string, expected?: ObjectDigest): Promise<ObjectDigest>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<ObjectInfo[]>;
  /** Deletes keys; absent keys are not an error. */
  delete(keys: readonly string[]): Promise<void>;
  /**
   * Aborts every call in flight (each fails at once with ObjectStoreError Failed, without retrying)
   * and refuses new ones: a shutdown abandons a hung checkpoint this way.
   */
  close(): void;
}

export type ObjectStoreErrorCode =
  /** The key does not exist. */
  | 'NotFound'
  /** Credentials refused or no permission on the bucket or folder. */
  | 'AccessDenied'
  /** The bucket or folder does not exist. */
  | 'NoSuchBucket'
  /** Network failure, a request past its deadline, throttling or a server error: worth retrying. */
  | 'Unavailable'
  /** The object's bytes do not match the size or checksum expected. */
  | 'Corrupt'
  /** Anything else (a bad URL, a full local disk). */
  | 'Failed';

export class ObjectStoreError extends Error {
  override readonly name = 'ObjectStoreError';
  readonly code: ObjectStoreErrorCode;
  readonly key: string | undefined;
  /** The request passed its deadline (retry.ts) rather than failing: counted apart in the metrics. */
  readonly timedOut: boolean;
  constructor(code: ObjectStoreErrorCode, message: string, options?: { key?: string; cause?: unknown; timedOut?: boolean }) {
    super(message, { cause: options?.cause });
    this.code = code;
    this.key = options?.key;
    this.timedOut = options?.timedOut ?? false;
  }

  get retryable(): boolean {
    return this.code === 'Unavailable';
  }
}

/** Throws ObjectStoreError Corrupt when a download does not match what the manifest recorded. */
export function verifyDigest(key: string, actual: ObjectDigest, expected: ObjectDigest | undefined): void {
  if (expected === undefined) return;
  if (actual.sizeBytes !== expected.sizeBytes) {
    throw new ObjectStoreError('Corrupt', `object ${key} has ${actual.sizeBytes} bytes, the manifest records ${expected.sizeBytes} (truncated or replaced)`, { key });
  }
  if (actual.sha256 !== expected.sha256) {
    throw new ObjectStoreError('Corrupt', `object ${key} fails its SHA-256 check (stored ${actual.sha256.slice(0, 16)}..., manifest ${expected.sha256.slice(0, 16)}...)`, { key });
  }
}

/**
 * Writes `chunks` to `path`, synced, calling `onChunk` before each (a store's progress and abort
 * check; it may throw to stop); the size and SHA-256 of what was written.
 */
export async function writeHashed(chunks: () => AsyncIterable<Uint8Array>, path: string, onChunk: () => void): Promise<ObjectDigest> {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const output = await open(path, 'w');
  try {
    // Opened only once the file is: a read stream made earlier errors with nobody listening.
    for await (const chunk of chunks()) {
      onChunk();
      hash.update(chunk);
      sizeBytes += chunk.length;
      await output.write(chunk);
    }
    await output.sync();
  } finally {
    await output.close();
  }
  return { sizeBytes, sha256: hash.digest('hex') };
}
