// From a --checkpoint-url to an ObjectStore: `file:///absolute/path` to the local folder store,
// `s3://bucket/prefix` to the S3 store (AWS environment variables for credentials and endpoint).
// A bad URL is a SqlError (22023) naming the accepted forms. Asynchronous because the S3 client
// is imported only when an s3:// URL asks for it.

import { fileURLToPath } from 'node:url';
import { SqlError, SqlState } from '../../sql/errors.js';
import { FileObjectStore } from './file-object-store.js';
import type { ObjectStore } from './object-store.js';
import type { RetryPolicy } from './retry.js';

export interface OpenObjectStoreOptions {
  readonly retry?: RetryPolicy;
  /** S3 only: overrides the endpoint from the environment (tests). */
  readonly endpoint?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

export async function openObjectStore(url: string, options: OpenObjectStoreOptions = {}): Promise<ObjectStore> {
  if (url.startsWith('file://')) {
    let path: string;
    try {
      path = fileURLToPath(url);
    } catch (error) {
      throw new SqlError(SqlState.invalidParameterValue, `invalid checkpoint URL "${url}": ${(error as Error).message}`, { hint: 'write file:///absolute/path' });
    }
    return new FileObjectStore(path);
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
