// A StateStore that tells the stream manager when the open epoch is aborted, so changes recorded
// by a failed statement never reach a view. Every call delegates to the real store.

import type { Epoch } from '../../sql/epoch.js';
import type { HistoryHold, ReadableWindow, StateStore, StateTable, StateTableSchema } from '../../storage/state-table.js';

export class AbortHookStore implements StateStore {
  constructor(
    private readonly inner: StateStore,
    private readonly onAbort: () => void,
  ) {}

  table(schema: StateTableSchema): StateTable {
    return this.inner.table(schema);
  }
  dropTable(tableId: number): void {
    this.inner.dropTable(tableId);
  }
  getMeta(key: string): Uint8Array | undefined {
    return this.inner.getMeta(key);
  }
  putMeta(key: string, value: Uint8Array): void {
    this.inner.putMeta(key, value);
  }
  putMetaNow(key: string, value: Uint8Array): void {
    if (this.inner.putMetaNow === undefined) throw new Error('this state store cannot write metadata outside an epoch');
    this.inner.putMetaNow(key, value);
  }
  commit(epoch: Epoch): void {
    this.inner.commit(epoch);
  }
  commitAsync(epoch: Epoch): Promise<void> {
    return this.inner.commitAsync(epoch);
  }
  settled(): Promise<void> {
    return this.inner.settled();
  }
  whenWritable(): Promise<void> {
    return this.inner.whenWritable();
  }
  get latestEpoch(): Epoch {
    return this.inner.latestEpoch;
  }
  abort(): void {
    this.onAbort();
    this.inner.abort();
  }
  get committedEpoch(): Epoch {
    return this.inner.committedEpoch;
  }
  readableWindow(tableId: number): ReadableWindow {
    return this.inner.readableWindow(tableId);
  }
  holdHistory(holder: string, tableId: number, hold: HistoryHold | undefined): void {
    this.inner.holdHistory(holder, tableId, hold);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
