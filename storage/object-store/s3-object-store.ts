// The object store on S3 or any S3-compatible server (MinIO, s3rver...): `s3://bucket/prefix`.
// Credentials, region and endpoint come from the standard AWS environment variables
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL or
// AWS_ENDPOINT_URL_S3, shared config files); with a custom endpoint, path-style addressing is used
// because S3-compatible servers rarely resolve bucket subdomains.
//
// Files above 16 MiB go up as a multipart upload of 8 MiB parts, each part retried on its own, so
// a dropped connection costs one part, not the file; an upload that fails is aborted so the server
// frees its parts. Every request sends Content-MD5 so the server rejects bytes damaged in flight;
// SHA-256 is computed while reading (for the manifest) and verified on download. The SDK's own
// retries are off: retry.ts gives every request (each part too) a deadline, aborts it through the
// SDK's abortSignal when it passes, retries with backoff and counts retries for the metrics.
// close() aborts every request in flight.

import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { open, rename, unlink } from 'node:fs/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { ObjectStoreError, verifyDigest, writeHashed, type ObjectDigest, type ObjectInfo, type ObjectStore } from './object-store.js';
import { DEFAULT_OBJECT_STORE_TIMEOUT_MS, DEFAULT_RETRY_POLICY, withDeadline, withRetries, type RetryPolicy } from './retry.js';

export interface S3ObjectStoreOptions {
  readonly bucket: string;
  /** Key prefix inside the bucket ('' or ending without a slash; one is added). */
  readonly prefix: string;
  /** Overrides AWS_ENDPOINT_URL (tests). */
  readonly endpoint?: string;
  readonly region?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly retry?: RetryPolicy;
  readonly partSizeBytes?: number;
  readonly multipartThresholdBytes?: number;
}

const NOT_FOUND = new Set(['NoSuchKey', 'NotFound']);
const ACCESS_DENIED = new Set(['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AllAccessDisabled', 'InvalidToken', 'ExpiredToken', 'Forbidden']);
const UNAVAILABLE = new Set(['SlowDown', 'RequestTimeout', 'TimeoutError', 'InternalError', 'ServiceUnavailable', 'RequestTimeTooSkewed', 'NetworkingError', 'AbortError']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNABORTED', 'UND_ERR_SOCKET']);

function s3Error(error: unknown, action: string, key?: string): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  const details = error as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const name = details.name ?? '';
  const status = details.$metadata?.httpStatusCode;
  const text = `${action}: ${name !== '' && name !== 'Error' ? `${name}: ` : ''}${details.message ?? String(error)}`;
  if (name === 'NoSuchBucket') return new ObjectStoreError('NoSuchBucket', text, { key, cause: error });
  if (NOT_FOUND.has(name) || status === 404) return new ObjectStoreError('NotFound', text, { key, cause: error });
  if (ACCESS_DENIED.has(name) || status === 403 || status === 401) return new ObjectStoreError('AccessDenied', text, { key, cause: error });
  if (
    UNAVAILABLE.has(name) ||
    (status !== undefined && (status >= 500 || status === 429)) ||
    (details.code !== undefined && NETWORK_CODES.has(details.code)) ||
    /socket hang up|ECONNREFUSED|ECONNRESET|EPIPE|timed? ?out/i.test(details.message ?? '')
  ) {
    return new ObjectStoreError('Unavailable', text, { key, cause: error });
  }
  return new ObjectStoreError('Failed', text, { key, cause: error });
}

function md5Base64(body: Uint8Array): string {
  return createHash('md5').update(body).digest('base64');
}

export class S3ObjectStore implements ObjectStore {
  readonly location: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly retry: RetryPolicy;
  private readonly partSizeBytes: number;
  private readonly multipartThresholdBytes: number;
  /** Aborted by close(): every request in flight stops. */
  private readonly closer = new AbortController();

  constructor(options: S3ObjectStoreOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix === '' || options.prefix.endsWith('/') ? options.prefix : `${options.prefix}/`;
    this.location = `s3://${options.bucket}/${this.prefix}`;
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
    // Every call in flight listens for close(): many at once is normal, not a leak.
    setMaxListeners(0, this.closer.signal);
    this.partSizeBytes = Math.max(5 << 20, options.partSizeBytes ?? 8 << 20);
    this.multipartThresholdBytes = options.multipartThresholdBytes ?? 16 << 20;
    // The pinned SDK version supports Node 20; its notice about future releases needing Node 22
    // would only add noise to the server's stderr (an operator can still set the variable).
    process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
    const endpoint = options.endpoint ?? process.env['AWS_ENDPOINT_URL_S3'] ?? process.env['AWS_ENDPOINT_URL'];
    this.client = new S3Client({
      region: options.region ?? process.env['AWS_REGION'] ?? process.env['AWS_DEFAULT_REGION'] ?? 'us-east-1',
      ...(endpoint !== undefined && endpoint !== '' ? { endpoint, forcePathStyle: true } : {}),
      ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
      maxAttempts: 1,
      // S3-compatible servers do not all know the newer flexible checksums; Content-MD5 and our
      // own SHA-256 cover integrity.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A socket idle this long fails the request; retry.ts's deadline bounds the whole request.
      requestHandler: { requestTimeout: this.retry.timeoutMs || DEFAULT_OBJECT_STORE_TIMEOUT_MS, connectionTimeout: 5_000 },
    });
  }

  private keyOf(key: string): string {
    return this.prefix + key;
  }

  async putBytes(key: string, body: Uint8Array): Promise<ObjectDigest> {
    const action = `cannot store ${key} in ${this.location}`;
    await withRetries(
      this.retry,
      async (abortSignal) => {
        try {
          await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key), Body: body, ContentMD5: md5Base64(body), ContentLength: body.length }), { abortSignal });
        } catch (error) {
          throw s3Error(error, action, key);
        }
      },
      this.context(action, key),
    );
    return { sizeBytes: body.length, sha256: createHash('sha256').update(body).digest('hex') };
  }

  async putFile(key: string, path: string): Promise<ObjectDigest> {
    let file;
    try {
      file = await open(path, 'r');
    } catch (error) {
      throw new ObjectStoreError('Failed', `cannot read ${path}: ${(error as Error).message}`, { key, cause: error });
    }
    try {
      const sizeBytes = (await file.stat()).size;
      const hash = createHash('sha256');
      if (sizeBytes < this.multipartThresholdBytes) {
        const body = await readRange(file, 0, sizeBytes, hash);
        await this.putBytes(key, body);
        return { sizeBytes, sha256: hash.digest('hex') };
      }
      await this.putMultipart(key, file, sizeBytes, hash);
      return { sizeBytes, sha256: hash.digest('hex') };
    } finally {
      await file.close();
    }
  }

  private async putMultipart(key: string, file: Awaited<ReturnType<typeof open>>, sizeBytes: number, hash: ReturnType<typeof createHash>): Promise<void> {
    const objectKey = this.keyOf(key);
    const action = `cannot store ${key} in ${this.location}`;
    const uploadId = await withRetries(
      this.retry,
      async (abortSignal) => {
        try {
          const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey }), { abortSignal });
          if (created.UploadId === undefined) throw new ObjectStoreError('Failed', `${action}: the server returned no upload id`, { key });
          return created.UploadId;
        } catch (error) {
          throw s3Error(error, action, key);
        }
      },
      this.context(action, key),
    );
    try {
      const parts: CompletedPart[] = [];
      for (let offset = 0, partNumber = 1; offset < sizeBytes; offset += this.partSizeBytes, partNumber++) {
        const body = await readRange(file, offset, Math.min(this.partSizeBytes, sizeBytes - offset), hash);
        const md5 = md5Base64(body);
        const partAction = `${action} (part ${partNumber})`;
        const eTag = await withRetries(
          this.retry,
          async (abortSignal) => {
            try {
              const uploaded = await this.client.send(
                new UploadPartCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentMD5: md5, ContentLength: body.length }),
                { abortSignal },
              );
              return uploaded.ETag;
            } catch (error) {
              throw s3Error(error, partAction, key);
            }
          },
          this.context(partAction, key),
        );
        parts.push({ PartNumber: partNumber, ETag: eTag });
      }
      await withRetries(
        this.retry,
        async (abortSignal) => {
          try {
            await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId, MultipartUpload: { Parts: parts } }), { abortSignal });
          } catch (error) {
            throw s3Error(error, action, key);
          }
        },
        this.context(action, key),
      );
    } catch (error) {
      // One try, within the deadline: a server that lost the upload frees its parts by itself
      // (bucket lifecycle rules), and the caller must hear the real failure.
      await withDeadline(
        this.retry.timeoutMs ?? DEFAULT_OBJECT_STORE_TIMEOUT_MS,
        (abortSignal) => this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: uploadId }), { abortSignal }),
        this.context(`cannot abort the upload of ${key}`, key),
      ).catch(() => undefined);
      throw error;
    }
  }

  async getBytes(key: string): Promise<Uint8Array> {
    const action = `cannot read ${key} from ${this.location}`;
    return withRetries(
      this.retry,
      async (abortSignal) => {
        try {
          const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }), { abortSignal });
          return await response.Body!.transformToByteArray();
        } catch (error) {
          throw s3Error(error, action, key);
        }
      },
      this.context(action, key),
    );
  }

  async getFile(key: string, path: string, expected?: ObjectDigest): Promise<ObjectDigest> {
    const temporary = `${path}.download`;
    const action = `cannot download ${key} from ${this.location}`;
    // The deadline applies to the wait for the next bytes, not to the whole download.
    const digest = await withRetries(
      this.retry,
      async (abortSignal, progress) => {
        try {
          const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }), { abortSignal });
          return await writeHashed(() => response.Body as AsyncIterable<Uint8Array>, temporary, () => {
            if (abortSignal.aborted) throw abortSignal.reason;
            progress();
          });
        } catch (error) {
          await unlink(temporary).catch(() => undefined);
          throw s3Error(error, action, key);
        }
      },
      this.context(action, key),
    );
    try {
      verifyDigest(key, digest, expected);
      await rename(temporary, path);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error instanceof ObjectStoreError ? error : new ObjectStoreError('Failed', `cannot write ${path}: ${(error as Error).message}`, { key, cause: error });
    }
    return digest;
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    const result: ObjectInfo[] = [];
    let token: string | undefined;
    do {
      const action = `cannot list ${this.location}`;
      const page = await withRetries(
        this.retry,
        async (abortSignal) => {
          try {
            return await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.keyOf(prefix), ContinuationToken: token, MaxKeys: 1000 }), { abortSignal });
          } catch (error) {
            throw s3Error(error, action);
          }
        },
        this.context(action),
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        result.push({ key: object.Key.slice(this.prefix.length), sizeBytes: object.Size ?? 0 });
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return result.sort((left, right) => (left.key < right.key ? -1 : left.key > right.key ? 1 : 0));
  }

  async delete(keys: readonly string[]): Promise<void> {
    // One request per key, a few at a time: DeleteObjects needs checksums not every
    // S3-compatible server accepts, and checkpoints delete tens of files, not thousands.
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < keys.length) {
        const key = keys[next++]!;
        const action = `cannot delete ${key} from ${this.location}`;
        await withRetries(
          this.retry,
          async (abortSignal) => {
            try {
              await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }), { abortSignal });
            } catch (error) {
              const converted = s3Error(error, action, key);
              if (converted.code !== 'NotFound') throw converted;
            }
          },
          this.context(action, key),
        );
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  }

  private context(action: string, key?: string): { action: string; key?: string; closed: AbortSignal } {
    return key === undefined ? { action, closed: this.closer.signal } : { action, key, closed: this.closer.signal };
  }

  close(): void {
    this.closer.abort();
    this.client.destroy();
  }
}

/** Reads [offset, offset + length) into one buffer, hashing as it goes (1 MiB reads keep the event loop free). */
async function readRange(file: Awaited<ReturnType<typeof open>>, offset: number, length: number, hash: ReturnType<typeof createHash>): Promise<Uint8Array> {
  const body = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await file.read(body, done, Math.min(1 << 20, length - done), offset + done);
    if (bytesRead === 0) throw new ObjectStoreError('Failed', `file shrank while uploading (expected ${length} bytes at ${offset})`);
    hash.update(body.subarray(done, done + bytesRead));
    done += bytesRead;
  }
  return body;
}
