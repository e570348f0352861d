// From a --checkpoint-url to an ObjectStore: `file:///absolute/path` to the local folder store,
// `s3://bucket/prefix` to the S3 store (AWS environment variables for credentials and endpoint).
// A bad URL is a SqlError (22023) naming the accepted forms. With `probe`, the store is checked
// before it is returned (probe.ts: write, read back, delete), so a server never says it is ready
// with a checkpoint URL it cannot use. Asynchronous because the S3 client is imported only when an
// s3:// URL asks for it.

import { fileURLToPath } from 'node:url';
import { SqlError, SqlState } from '../../sql/errors.js';
import { FileObjectStore } from './file-object-store.js';
import type { ObjectStore } from './object-store.js';
import { PROBE_TIMEOUT_MS, probeObjectStore } from './probe.js';
import { DEFAULT_OBJECT_STORE_TIMEOUT_MS, DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';

export interface OpenObjectStoreOptions {
  /** Attempts, backoff and the deadline of each request (retry.ts). */
  readonly retry?: RetryPolicy;
  /** S3 only: overrides the endpoint from the environment (tests). */
  readonly endpoint?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Check the store works before returning it (the server's start; `oxbow restore` only reads). */
  readonly probe?: boolean;
}

export async function openObjectStore(url: string, options: OpenObjectStoreOptions = {}): Promise<ObjectStore> {
  if (options.probe === true) {
    // A store of its own, so the check waits at most PROBE_TIMEOUT_MS per request and a call it
    // abandons (a folder that never answers) stays with it.
    const retry = options.retry ?? DEFAULT_RETRY_POLICY;
    const timeoutMs = Math.min(retry.timeoutMs || DEFAULT_OBJECT_STORE_TIMEOUT_MS, PROBE_TIMEOUT_MS);
    const checker = await openUnchecked(url, { ...options, retry: { ...retry, attempts: Math.min(retry.attempts, 2), timeoutMs } });
    try {
      await probeObjectStore(checker, url);
    } finally {
      checker.close();
    }
  }
  return openUnchecked(url, options);
}

async function openUnchecked(url: string, options: OpenObjectStoreOptions): Promise<ObjectStore> {
  if (url.startsWith('file://')) {
    let path: string;
    try {
      path = fileURLToPath(url);
    } catch (error) {
      throw new SqlError(SqlState.invalidParameterValue, `invalid checkpoint URL "${url}": ${(error as Error).message}`, { hint: 'write file:///absolute/path' });
    }
    return new FileObjectStore(path, options.retry === undefined ? {} : { retry: options.retry });
  }
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (s3 !== null) {
    // Loaded on demand: the AWS SDK costs a noticeable part of start-up, and most runs use a folder.
    const { S3ObjectStore } = await import('./s3-object-store.js');
    return new S3ObjectStore({
      bucket: s3[1]!,
      prefix: s3[2]!.replace(/\/+$/, ''),
      ...(options.retry !== undefined ? { retry: options.retry } : {}),
      ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
      ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
    });
  }
  throw new SqlError(SqlState.invalidParameterValue, `invalid checkpoint URL "${url}": write file:///absolute/path or s3://bucket/prefix`, { hint: 'write file:///absolute/path or s3://bucket/prefix' });
}
