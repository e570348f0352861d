// A client of a Confluent-compatible schema registry (Confluent Schema Registry, Karapace,
// Redpanda, Apicurio's ccompat API) and the Confluent wire format: magic byte 0, a 4-byte
// big-endian schema id, then the payload (Avro binary; for Protobuf a varint array of message
// indexes first). Schemas by id are cached for the client's lifetime (ids are immutable); an id the
// registry answers 404 (40403) for during UNKNOWN_AFTER_MS is cached as unknown (a registry just
// restarted answers 404 until it has read its schemas topic). Other failures (a registry that is down, 5xx) throw
// `RegistryUnavailable` for the caller to retry.

export const CONFLUENT_MAGIC = 0;
export const CONFLUENT_HEADER_BYTES = 5;

export interface RegistryOptions {
  readonly url: string;
  readonly username?: string;
  readonly password?: string;
}

export interface RegisteredSchema {
  readonly id: number;
  /** AVRO (the registry's default, often omitted), PROTOBUF or JSON. */
  readonly schemaType: string;
  readonly schema: string;
  readonly version?: number;
}

/** The registry could not be asked (down, timed out, 5xx): retry later. */
export class RegistryUnavailable extends Error {}

/** The registry refused the credentials (401, 403). */
export class RegistryUnauthorized extends Error {}

/** The registry answered that the schema, subject or version does not exist. */
export class RegistryNotFound extends Error {}

/** How long an id must be answered 404 before messages naming it are rejected as unknown. */
const UNKNOWN_AFTER_MS = 3000;
const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';
const REQUEST_TIMEOUT_MS = 10_000;

/** The registry options of an ENCODE option map (`schema.registry`, `.username`, `.password`; in a relation's options under `encode.`). */
export function registryOptions(options: Readonly<Record<string, string>>, prefix = ''): RegistryOptions | undefined {
  const url = options[`${prefix}schema.registry`];
  if (url === undefined) return undefined;
  const username = options[`${prefix}schema.registry.username`];
  const password = options[`${prefix}schema.registry.password`];
  return { url: url.replace(/\/+$/, ''), ...(username !== undefined ? { username } : {}), ...(password !== undefined ? { password } : {}) };
}

export class SchemaRegistry {
  private readonly byId = new Map<number, RegisteredSchema | null>();

  constructor(readonly options: RegistryOptions) {}

  /** The schema with `id`, null when the registry does not know it; throws RegistryUnavailable. */
  async schemaById(id: number): Promise<RegisteredSchema | null> {
    const cached = this.byId.get(id);
    if (cached !== undefined) return cached;
    try {
      const body = (await this.request('GET', `/schemas/ids/${id}`)) as { schema: string; schemaType?: string };
      const schema: RegisteredSchema = { id, schema: body.schema, schemaType: body.schemaType ?? 'AVRO' };
      this.byId.set(id, schema);
      return schema;
    } catch (error) {
      if (error instanceof RegistryNotFound) return null;
      throw error;
    }
  }

  /** Records that the registry has no schema `id` (after `fetchSchemaIds` asked long enough). */
  markUnknown(id: number): void {
    this.byId.set(id, null);
  }

  /** A schema already fetched (`schemaById`), null when marked unknown, undefined when not asked yet. */
  cached(id: number): RegisteredSchema | null | undefined {
    return this.byId.get(id);
  }

  /** The latest version under `subject`; throws RegistryNotFound or RegistryUnavailable. */
  async latest(subject: string): Promise<RegisteredSchema> {
    const body = (await this.request('GET', `/subjects/${encodeURIComponent(subject)}/versions/latest`)) as { id: number; schema: string; schemaType?: string; version: number };
    const schema: RegisteredSchema = { id: body.id, schema: body.schema, schemaType: body.schemaType ?? 'AVRO', version: body.version };
    this.byId.set(body.id, schema);
    return schema;
  }

  /** Registers `schema` under `subject` (the same schema again returns its id). */
  async register(subject: string, schema: string, schemaType = 'AVRO'): Promise<number> {
    const body = (await this.request('POST', `/subjects/${encodeURIComponent(subject)}/versions`, schemaType === 'AVRO' ? { schema } : { schema, schemaType })) as { id: number };
    this.byId.set(body.id, { id: body.id, schema, schemaType });
    return body.id;
  }

  private async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { accept: CONTENT_TYPE };
    if (body !== undefined) headers['content-type'] = CONTENT_TYPE;
    if (this.options.username !== undefined) {
      headers['authorization'] = `Basic ${Buffer.from(`${this.options.username}:${this.options.password ?? ''}`).toString('base64')}`;
    }
    let response: Response;
    try {
      response = await fetch(this.options.url + path, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new RegistryUnavailable(`schema registry ${this.options.url} unreachable: ${cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error))}`);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? {} : JSON.parse(text);
    } catch {
      parsed = { message: text };
    }
    if (response.ok) return parsed;
    const message = (parsed as { message?: string }).message ?? text;
    if (response.status === 404) throw new RegistryNotFound(`schema registry ${this.options.url}: ${message}`);
    if (response.status === 401 || response.status === 403) throw new RegistryUnauthorized(`schema registry ${this.options.url} refused the credentials (${response.status}): ${message}`);
    if (response.status >= 500 || response.status === 408 || response.status === 429) {
      throw new RegistryUnavailable(`schema registry ${this.options.url} answered ${response.status}: ${message}`);
    }
    throw new Error(`schema registry ${this.options.url} answered ${response.status} to ${method} ${path}: ${message}`);
  }
}

/** The schema id of a message in the Confluent wire format; throws for a message without the framing. */
export function confluentSchemaId(value: Uint8Array): number {
  if (value.length < CONFLUENT_HEADER_BYTES) throw new Error(`message of ${value.length} bytes is shorter than the schema registry's 5-byte header`);
  if (value[0] !== CONFLUENT_MAGIC) throw new Error(`message does not start with the schema registry's magic byte 0 (found ${value[0]})`);
  return ((value[1]! << 24) | (value[2]! << 16) | (value[3]! << 8) | value[4]!) >>> 0;
}

/** The 5-byte header of the Confluent wire format for schema `id`. */
export function confluentHeader(id: number): Buffer {
  const header = Buffer.alloc(CONFLUENT_HEADER_BYTES);
  header[0] = CONFLUENT_MAGIC;
  header.writeUInt32BE(id, 1);
  return header;
}

/**
 * Fetches every schema id in `values` not fetched yet (an id answered 404 for UNKNOWN_AFTER_MS is
 * marked unknown); while the registry is unavailable, calls
 * `trouble` and retries with back-off (up to 5 s) until it answers or `stopped()` says to give
 * up. Messages without the framing are skipped here (the decoder rejects them).
 */
export async function fetchSchemaIds(
  registry: SchemaRegistry,
  values: readonly (Uint8Array | null)[],
  from: number,
  trouble: (message: string) => void,
  recovered: () => void,
  stopped: () => boolean,
): Promise<void> {
  let delay = 100;
  let troubled = false;
  for (let i = from; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined || value.length < CONFLUENT_HEADER_BYTES || value[0] !== CONFLUENT_MAGIC) continue;
    const id = confluentSchemaId(value);
    if (registry.cached(id) !== undefined) continue;
    let notFoundSince: number | undefined;
    for (;;) {
      try {
        if ((await registry.schemaById(id)) !== null) break;
        const now = Date.now();
        notFoundSince ??= now;
        if (now - notFoundSince >= UNKNOWN_AFTER_MS) {
          registry.markUnknown(id);
          break;
        }
        if (stopped()) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
      } catch (error) {
        if (stopped()) return;
        if (!(error instanceof RegistryUnavailable)) {
          trouble(`schema id ${id}: ${error instanceof Error ? error.message : String(error)}`);
        } else trouble(error.message);
        troubled = true;
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  }
  if (troubled) recovered();
}
