// Errors inside running views (division by zero, a bad cast): counted per view and message, with
// the last time seen, for the system table oxbow_catalog.view_errors. Kept in memory: a restart
// starts the counts again (the view's contents, where the failing values are NULL, are durable).

export interface ViewErrorRecord {
  readonly viewId: number;
  readonly message: string;
  count: number;
  /** Microseconds since 1970 (a timestamptz value). */
  lastMicros: number;
}

/** At most this many distinct messages per view, so a flood of distinct texts stays bounded. */
const MESSAGES_PER_VIEW_LIMIT = 100;

export class ViewErrors {
  private readonly byView = new Map<number, Map<string, ViewErrorRecord>>();

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
  }

  forget(viewId: number): void {
    this.byView.delete(viewId);
  }

  records(): ViewErrorRecord[] {
    return [...this.byView.values()].flatMap((messages) => [...messages.values()]);
  }
}
