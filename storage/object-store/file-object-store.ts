// The object store on a local folder (`file:///path`, the embedded default
// `file://<data-dir>/checkpoints`). A key is a relative path under the root. Writes go to a file
// in `<root>/.incoming/`, are fsynced, then renamed into place, so a reader never sees half an
// object and a crash leaves only an incoming file, which a later open removes once it is an hour
// old (several processes write one folder: a cluster's leader and its nodes' stores, each its own
// files; one's open must not take another's file being written). Every byte is hashed while it is
// copied, so a put or get costs one read of the data.
//
// Deadlines (retry.ts): a file operation cannot be cancelled, so at its deadline the call stops
// waiting and fails as Unavailable (retried with backoff). The abandoned operation may still hold
// a thread of libuv's pool (a folder that never answers: a hung network mount, `/proc`, where
// Node's mkdir never returns and spins its thread); while one has not returned, new calls fail at
// once instead of taking the pool's remaining threads, which RocksDB and every file read need.

import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { ObjectStoreError, verifyDigest, writeHashed, type ObjectDigest, type ObjectInfo, type ObjectStore } from './object-store.js';
import { DEFAULT_RETRY_POLICY, withRetries, type RetryPolicy } from './retry.js';

const INCOMING = '.incoming';
/** An incoming file untouched this long is a crashed writer's (a live one writes or renames it within seconds). */
const STALE_INCOMING_MS = 60 * 60_000;
const CHUNK_BYTES = 1 << 20;

function fileError(error: unknown, action: string, key?: string): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const message = `${action}: ${(error as Error).message}`;
  if (code === 'ENOENT') return new ObjectStoreError('NotFound', message, { key, cause: error });
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new ObjectStoreError('AccessDenied', message, { key, cause: error });
  if (code === 'EIO' || code === 'EAGAIN' || code === 'EBUSY') return new ObjectStoreError('Unavailable', message, { key, cause: error });
  return new ObjectStoreError('Failed', message, { key, cause: error });
}

export interface FileObjectStoreOptions {
  readonly retry?: RetryPolicy;
}

export class FileObjectStore implements ObjectStore {
  readonly location: string;
  private readonly root: string;
  private readonly retry: RetryPolicy;
  private sequence = 0;
  private prepared: Promise<void> | undefined;
  /** Operations abandoned at their deadline that have not returned yet, with their start. */
  private readonly hung = new Set<{ readonly sinceMs: number }>();
  private readonly closer = new AbortController();

  constructor(root: string, options: FileObjectStoreOptions = {}) {
    this.root = root;
    this.location = `file://${root}`;
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
    // Every call in flight listens for close(): many at once is normal, not a leak.
    setMaxListeners(0, this.closer.signal);
  }

  /** One call: a deadline per attempt, retries, and no new file operation while one hangs. */
  private call<T>(action: string, key: string | undefined, operation: (progress: () => void) => Promise<T>): Promise<T> {
    return withRetries(
      this.retry,
      async (signal, progress) => {
        if (this.hung.size > 0) {
          const seconds = Math.round((Date.now() - Math.min(...[...this.hung].map((entry) => entry.sinceMs))) / 1000);
          throw new ObjectStoreError('Unavailable', `${action}: an earlier operation on ${this.root} has not returned for ${seconds} s (the folder does not answer)`, { key });
        }
        const entry = { sinceMs: Date.now() };
        const running = operation(progress);
        signal.addEventListener('abort', () => {
          this.hung.add(entry);
          running.then(
            () => this.hung.delete(entry),
            () => this.hung.delete(entry),
          );
        });
        return running;
      },
      key === undefined ? { action, closed: this.closer.signal } : { action, key, closed: this.closer.signal },
    );
  }

  private pathOf(key: string): string {
    if (key === '' || key.startsWith('/') || key.split('/').some((part) => part === '..' || part === '.' || part === '' || part === INCOMING)) {
      throw new ObjectStoreError('Failed', `invalid object key "${key}"`, { key });
    }
    return join(this.root, ...key.split('/'));
  }

  /** Creates the root and removes the incoming files a crash left behind (once per store). */
  private prepare(): Promise<void> {
    this.prepared ??= (async () => {
      try {
        const incoming = join(this.root, INCOMING);
        await mkdir(incoming, { recursive: true });
        const now = Date.now();
        for (const name of await readdir(incoming)) {
          const path = join(incoming, name);
          const info = await stat(path).catch(() => undefined);
          // Gone meanwhile (renamed into place by its writer), or another writer's still.
          if (info !== undefined && now - info.mtimeMs > STALE_INCOMING_MS) await rm(path, { recursive: true, force: true });
        }
      } catch (error) {
        this.prepared = undefined;
        throw fileError(error, `cannot prepare the checkpoint folder ${this.root}`);
      }
    })();
    return this.prepared;
  }

  private incomingPath(): string {
    return join(this.root, INCOMING, `${process.pid}-${Date.now()}-${this.sequence++}`);
  }

  /** Moves a fully written and fsynced incoming file to `path`, durably. */
  private async publish(incoming: string, path: string): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    await rename(incoming, path);
    const directory = await open(dirname(path), 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  }

  async putFile(key: string, path: string): Promise<ObjectDigest> {
    const target = this.pathOf(key);
    return this.call(`cannot store ${key} in ${this.location}`, key, (progress) => this.putFileOnce(key, path, target, progress));
  }

  private async putFileOnce(key: string, path: string, target: string, progress: () => void): Promise<ObjectDigest> {
    await this.prepare();
    const incoming = this.incomingPath();
    try {
      const digest = await writeHashed(() => createReadStream(path, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Uint8Array>, incoming, progress);
      await this.publish(incoming, target);
      return digest;
    } catch (error) {
      await unlink(incoming).catch(() => undefined);
      throw fileError(error, `cannot store ${key} in ${this.location}`, key);
    }
  }

  async putBytes(key: string, body: Uint8Array): Promise<ObjectDigest> {
    const target = this.pathOf(key);
    return this.call(`cannot store ${key} in ${this.location}`, key, () => this.putBytesOnce(key, body, target));
  }

  private async putBytesOnce(key: string, body: Uint8Array, target: string): Promise<ObjectDigest> {
    await this.prepare();
    const incoming = this.incomingPath();
    try {
      const output = await open(incoming, 'w');
      try {
        await output.write(body);
        await output.sync();
      } finally {
        await output.close();
      }
      await this.publish(incoming, target);
      return { sizeBytes: body.length, sha256: createHash('sha256').update(body).digest('hex') };
    } catch (error) {
      await unlink(incoming).catch(() => undefined);
      throw fileError(error, `cannot store ${key} in ${this.location}`, key);
    }
  }

  async getBytes(key: string): Promise<Uint8Array> {
    const source = this.pathOf(key);
    const action = `cannot read ${key} from ${this.location}`;
    return this.call(action, key, async () => {
      try {
        return new Uint8Array(await readFile(source));
      } catch (error) {
        throw fileError(error, action, key);
      }
    });
  }

  async getFile(key: string, path: string, expected?: ObjectDigest): Promise<ObjectDigest> {
    const source = this.pathOf(key);
    return this.call(`cannot download ${key} from ${this.location}`, key, (progress) => this.getFileOnce(key, source, path, expected, progress));
  }

  private async getFileOnce(key: string, source: string, path: string, expected: ObjectDigest | undefined, progress: () => void): Promise<ObjectDigest> {
    const temporary = `${path}.download`;
    try {
      const digest = await writeHashed(() => createReadStream(source, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Uint8Array>, temporary, progress);
      verifyDigest(key, digest, expected);
      await rename(temporary, path);
      return digest;
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw fileError(error, `cannot download ${key} from ${this.location}`, key);
    }
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    return this.call(`cannot list ${this.location}`, undefined, () => this.listOnce(prefix));
  }

  private async listOnce(prefix: string): Promise<ObjectInfo[]> {
    const result: ObjectInfo[] = [];
    const walk = async (directory: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(directory, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      for (const entry of entries) {
        const path = join(directory, entry.name);
        if (entry.isDirectory()) {
          if (directory === this.root && entry.name === INCOMING) continue;
          await walk(path);
        } else if (entry.isFile()) {
          const key = relative(this.root, path).split(sep).join('/');
          if (key.startsWith(prefix)) result.push({ key, sizeBytes: (await stat(path)).size });
        }
      }
    };
    try {
      // Start at the deepest folder the prefix names, so listing one checkpoint does not walk all.
      const slash = prefix.lastIndexOf('/');
      await walk(slash < 0 ? this.root : join(this.root, ...prefix.slice(0, slash).split('/')));
    } catch (error) {
      throw fileError(error, `cannot list ${this.location}`);
    }
    return result.sort((left, right) => (left.key < right.key ? -1 : left.key > right.key ? 1 : 0));
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const path = this.pathOf(key);
      const action = `cannot delete ${key} from ${this.location}`;
      await this.call(action, key, async () => {
        try {
          await unlink(path);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fileError(error, action, key);
        }
      });
    }
  }

  close(): void {
    this.closer.abort();
  }
}
