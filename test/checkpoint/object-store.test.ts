// The object-store contract against both real implementations: a local folder and s3rver (a real
// S3-compatible server in a child process). Expected digests are computed here with node:crypto
// from the bytes the test wrote, never taken from the store's answer.

import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileObjectStore } from '../../storage/object-store/file-object-store.js';
import { ObjectStoreError, type ObjectStore } from '../../storage/object-store/object-store.js';
import { openObjectStore } from '../../storage/object-store/open-object-store.js';
import { S3ObjectStore } from '../../storage/object-store/s3-object-store.js';
import { S3RVER_CREDENTIALS } from './support/s3rver.js';
import { s3rverSuite } from './support/s3rver-suite.js';

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const fastRetry = { attempts: 3, baseDelayMs: 10, maxDelayMs: 50 };

const suite = s3rverSuite('oxbow-object-store-');
const work = suite.work;

const implementations: [string, () => ObjectStore][] = [
  ['local folder', () => new FileObjectStore(mkdtempSync(join(work, 'folder-')))],
  [
    's3rver',
    () =>
      new S3ObjectStore({
        bucket: 'oxbow',
        prefix: `run-${randomBytes(4).toString('hex')}`,
        endpoint: suite.s3rver.endpoint,
        credentials: S3RVER_CREDENTIALS,
        retry: fastRetry,
        partSizeBytes: 5 << 20,
        multipartThresholdBytes: 6 << 20,
      }),
  ],
];

describe.each(implementations)('object store: %s', (_name, create) => {
  it('reads every object back right after its PUT (read-after-write, as S3 promises)', async () => {
    const store = create();
    // Many bodies at once (the server's file system busy): s3rver 3.7.1 as shipped answered some PUTs before writing the
    // object's file, so a GET right after read 0 bytes (test/checkpoint/support/s3rver-child.mjs).
    for (let round = 0; round < 5; round++) {
      const bodies = Array.from({ length: 100 }, (_, index) => randomBytes(16 + ((round * 100 + index) % 50) * 1024));
      await Promise.all(
        bodies.map(async (body, index) => {
          const key = `probe/raw-${round}-${index}`;
          await store.putBytes(key, body);
          const read = Buffer.from(await store.getBytes(key));
          expect(read.length, key).toBe(body.length);
          expect(sha256(read), key).toBe(sha256(body));
        }),
      );
    }
    store.close();
  });

  it('puts, reads, lists in key order and deletes', async () => {
    const store = create();
    const small = Buffer.from('{"epoch":"1"}');
    expect(await store.putBytes('manifests/0002.json', small)).toEqual({ sizeBytes: small.length, sha256: sha256(small) });
    await store.putBytes('manifests/0001.json', Buffer.from('x'));
    await store.putBytes('sst/a/000001.sst', Buffer.from('yy'));
    expect(Buffer.from(await store.getBytes("manifests/0002.json")).equals(small)).toBe(true);
    expect(await store.list('manifests/')).toEqual([
      { key: 'manifests/0001.json', sizeBytes: 1 },
      { key: 'manifests/0002.json', sizeBytes: small.length },
    ]);
    expect((await store.list('')).map((object) => object.key)).toEqual(['manifests/0001.json', 'manifests/0002.json', 'sst/a/000001.sst']);
    await store.delete(['manifests/0001.json', 'does/not/exist']);
    expect((await store.list('manifests/')).map((object) => object.key)).toEqual(['manifests/0002.json']);
    const missing = await store.getBytes('manifests/0001.json').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ObjectStoreError);
    expect((missing as ObjectStoreError).code).toBe('NotFound');
    store.close();
  });

  it('uploads a large file (multipart on S3) and downloads it with its checksum verified', async () => {
    const store = create();
    const content = randomBytes(13 * 1024 * 1024 + 17);
    const source = join(work, `large-${randomBytes(4).toString('hex')}`);
    writeFileSync(source, content);
    const expected = { sizeBytes: content.length, sha256: sha256(content) };
    expect(await store.putFile('sst/large.sst', source)).toEqual(expected);
    const target = `${source}.copy`;
    expect(await store.getFile('sst/large.sst', target, expected)).toEqual(expected);
    expect(readFileSync(target).equals(content)).toBe(true);
    store.close();
  });

  it('refuses a download whose bytes do not match the expected checksum or size, leaving nothing behind', async () => {
    const store = create();
    const content = Buffer.from('the real bytes');
    await store.putBytes('sst/f.sst', content);
    const target = join(work, `refused-${randomBytes(4).toString('hex')}`);
    const wrongSum = await store.getFile('sst/f.sst', target, { sizeBytes: content.length, sha256: sha256(Buffer.from('other bytes!!!')) }).catch((error: unknown) => error);
    expect((wrongSum as ObjectStoreError).code).toBe('Corrupt');
    const wrongSize = await store.getFile('sst/f.sst', target, { sizeBytes: content.length + 1, sha256: sha256(content) }).catch((error: unknown) => error);
    expect((wrongSize as ObjectStoreError).code).toBe('Corrupt');
    expect((wrongSize as Error).message).toMatch(/truncated/);
    expect(existsSync(target)).toBe(false);
    store.close();
  });

  it('lists past one page (continuation)', async () => {
    const store = create();
    const keys = Array.from({ length: 1005 }, (_, index) => `many/${String(index).padStart(5, '0')}`);
    for (let index = 0; index < keys.length; index += 200) {
      await Promise.all(keys.slice(index, index + 200).map((key) => store.putBytes(key, Buffer.from(key))));
    }
    const listed = await store.list('many/');
    expect(listed.map((object) => object.key)).toEqual(keys);
    store.close();
  });
});


/** close() fails the request left hanging 100 ms after it started: Failed, "closed", within a second. */
async function expectCloseEndsHanging(store: { close(): void }, request: Promise<unknown>): Promise<void> {
  const hanging = request.catch((caught: unknown) => caught);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const closing = Date.now();
  store.close();
  const closed = (await hanging) as ObjectStoreError;
  expect(closed.code).toBe('Failed');
  expect(closed.message).toMatch(/closed/);
  expect(Date.now() - closing).toBeLessThan(1_000);
}
describe('object store failures', () => {
  it('S3: wrong credentials are AccessDenied at once (not retried)', async () => {
    let retries = 0;
    const store = new S3ObjectStore({
      bucket: 'oxbow',
      prefix: 'denied',
      endpoint: suite.s3rver.endpoint,
      credentials: { accessKeyId: 'NOBODY', secretAccessKey: 'wrong' },
      retry: { ...fastRetry, onRetry: () => retries++ },
    });
    const error = await store.putBytes('x', Buffer.from('x')).catch((caught: unknown) => caught);
    expect((error as ObjectStoreError).code).toBe('AccessDenied');
    expect(retries).toBe(0);
    store.close();
  });

  it('S3: a missing bucket is NoSuchBucket', async () => {
    const store = new S3ObjectStore({ bucket: 'no-such-bucket', prefix: '', endpoint: suite.s3rver.endpoint, credentials: S3RVER_CREDENTIALS, retry: fastRetry });
    const error = await store.list('').catch((caught: unknown) => caught);
    expect((error as ObjectStoreError).code).toBe('NoSuchBucket');
    store.close();
  });

  it('S3: an unreachable server is Unavailable after the retries', async () => {
    let retries = 0;
    const store = new S3ObjectStore({
      bucket: 'oxbow',
      prefix: '',
      endpoint: 'http://127.0.0.1:9',
      credentials: S3RVER_CREDENTIALS,
      retry: { ...fastRetry, onRetry: () => retries++ },
    });
    const error = await store.putBytes('x', Buffer.from('x')).catch((caught: unknown) => caught);
    expect((error as ObjectStoreError).code).toBe('Unavailable');
    expect(retries).toBe(fastRetry.attempts - 1);
    store.close();
  });

  it('S3: a request to a server that does not answer is aborted at its deadline and retried; close() stops a call at once', async () => {
    let timeouts = 0;
    let retries = 0;
    const store = new S3ObjectStore({
      bucket: 'oxbow',
      prefix: `hang-${randomBytes(4).toString('hex')}`,
      endpoint: suite.s3rver.endpoint,
      credentials: S3RVER_CREDENTIALS,
      retry: { ...fastRetry, attempts: 2, timeoutMs: 300, onTimeout: () => timeouts++, onRetry: () => retries++ },
    });
    suite.s3rver.pause();
    try {
      const started = Date.now();
      const error = (await store.putBytes('x', Buffer.from('x')).catch((caught: unknown) => caught)) as ObjectStoreError;
      expect(error).toBeInstanceOf(ObjectStoreError);
      expect(error.code).toBe('Unavailable');
      expect(error.timedOut).toBe(true);
      expect(error.message).toMatch(/cannot store x in s3:\/\/oxbow\/hang-.*: no answer within 300 ms/);
      expect([timeouts, retries]).toEqual([2, 1]);
      expect(Date.now() - started).toBeLessThan(5_000);

      await expectCloseEndsHanging(store, store.list(''));
    } finally {
      suite.s3rver.resume();
    }
  });

  it('folder: a file operation that never returns is abandoned at its deadline; no new one starts until it returns', async () => {
    // A named pipe: reading it blocks a thread of libuv's pool until a writer opens it.
    const root = mkdtempSync(join(work, 'fifo-'));
    execFileSync('mkfifo', [join(root, 'hang')]);
    let timeouts = 0;
    const store = new FileObjectStore(root, { retry: { ...fastRetry, attempts: 2, timeoutMs: 300, onTimeout: () => timeouts++ } });
    const started = Date.now();
    const error = (await store.getBytes('hang').catch((caught: unknown) => caught)) as ObjectStoreError;
    expect(error.code).toBe('Unavailable');
    // The first attempt passed its deadline; the retry found it still running and did not start another.
    expect(timeouts).toBe(1);
    expect(error.message).toMatch(/cannot read hang from file:.*an earlier operation on .* has not returned/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const refused = (await store.putBytes('other', Buffer.from('x')).catch((caught: unknown) => caught)) as ObjectStoreError;
    expect(refused.code).toBe('Unavailable');
    expect(existsSync(join(root, 'other'))).toBe(false);

    // The pipe gets a writer: the abandoned read returns, and the folder serves calls again.
    writeFileSync(join(root, 'hang'), 'released');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await store.putBytes('other', Buffer.from('stored'));
    expect(readFileSync(join(root, 'other'), 'utf8')).toBe('stored');
    store.close();
  });

  it('folder: close() stops a call that waits on a file operation', async () => {
    const root = mkdtempSync(join(work, 'fifo-close-'));
    execFileSync('mkfifo', [join(root, 'hang')]);
    const store = new FileObjectStore(root, { retry: { ...fastRetry, timeoutMs: 60_000 } });
    await expectCloseEndsHanging(store, store.getBytes('hang'));
    await expect(store.list('')).rejects.toThrow(/closed/);
    writeFileSync(join(root, 'hang'), 'released');
  });

  it("folder: a store opened on a folder another writes leaves its files being written, and removes a crash's old ones", async () => {
    const root = mkdtempSync(join(work, 'shared-'));
    const first = new FileObjectStore(root);
    await first.putBytes('a', Buffer.from('first'));
    // Another writer's file in the middle of its write, and one a writer that crashed an hour ago left.
    const writing = join(root, '.incoming', '999999-1-0');
    const crashed = join(root, '.incoming', '999999-0-0');
    writeFileSync(writing, 'half');
    writeFileSync(crashed, 'left');
    const old = new Date(Date.now() - 2 * 60 * 60_000);
    utimesSync(crashed, old, old);
    const second = new FileObjectStore(root);
    await second.putBytes('b', Buffer.from('second'));
    expect(existsSync(writing)).toBe(true);
    expect(existsSync(crashed)).toBe(false);
    expect(Buffer.from(await second.getBytes('a')).toString()).toBe('first');
    expect((await first.list('')).map((object) => object.key)).toEqual(['a', 'b']);
  });

  it('folder: a key escaping the root is refused', async () => {
    const store = new FileObjectStore(join(work, 'escape'));
    const error = await store.putBytes('../outside', Buffer.from('x')).catch((caught: unknown) => caught);
    expect((error as ObjectStoreError).code).toBe('Failed');
    expect(existsSync(join(work, 'outside'))).toBe(false);
  });

  it('openObjectStore accepts file:// and s3:// and names the forms otherwise', async () => {
    expect((await openObjectStore(`file://${work}/x`)).location).toBe(`file://${work}/x`);
    const s3 = await openObjectStore('s3://bucket/some/prefix/', { endpoint: suite.s3rver.endpoint });
    expect(s3.location).toBe('s3://bucket/some/prefix/');
    s3.close();
    await expect(openObjectStore('ftp://x')).rejects.toThrow(/file:\/\/\/absolute\/path or s3:\/\/bucket\/prefix/);
  });
});
