// Errors inside running views (division by zero, a bad cast): counted per view and message, with
// the last time seen, for the system table oxbow_catalog.view_errors. Durable: the stream manager
// writes the records (`encode`) into the store's metadata with the epoch that changed them and
// `restore`s them on start, so a restart keeps the counts, as it keeps the views' contents.

export interface ViewErrorRecord {
  readonly viewId: number;
  readonly message: string;
  count: number;
  /** Microseconds since 1970 (a timestamptz value). */
  lastMicros: number;
}

/** At most this many distinct messages per view, so a flood of distinct texts stays bounded. */
const MESSAGES_PER_VIEW_LIMIT = 100;

/** The store metadata key the records are committed under. */
export const VIEW_ERRORS_META_KEY = 'view_errors';

export class ViewErrors {
  private readonly byView = new Map<number, Map<string, ViewErrorRecord>>();
  /** Changed since the last `encode` (the records need writing with the open epoch). */
  dirty = false;

  record(viewId: number, message: string): void {
    let messages = this.byView.get(viewId);
    if (messages === undefined) this.byView.set(viewId, (messages = new Map()));
    let record = messages.get(message);
    if (record === undefined) {
      if (messages.size >= MESSAGES_PER_VIEW_LIMIT) return;
      record = { viewId, message, count: 0, lastMicros: 0 };
      messages.set(message, record);
    }
    record.count++;
    record.lastMicros = Date.now() * 1000;
    this.dirty = true;
  }

  forget(viewId: number): void {
    if (this.byView.delete(viewId)) this.dirty = true;
  }

  /** Every record as JSON bytes (clears `dirty`). */
  encode(): Uint8Array {
    this.dirty = false;
    const records = this.records().map((record) => [record.viewId, record.message, record.count, record.lastMicros]);
    return new TextEncoder().encode(JSON.stringify(records));
  }

  /** Replaces the records with those of `encode`'s bytes (on start). */
  restore(bytes: Uint8Array): void {
    this.byView.clear();
    const records = JSON.parse(new TextDecoder().decode(bytes)) as [number, string, number, number][];
    for (const [viewId, message, count, lastMicros] of records) {
      let messages = this.byView.get(viewId);
      if (messages === undefined) this.byView.set(viewId, (messages = new Map()));
      messages.set(message, { viewId, message, count, lastMicros });
    }
    this.dirty = false;
  }

  records(): ViewErrorRecord[] {
    return [...this.byView.values()].flatMap((messages) => [...messages.values()]);
  }
}
