// Decoding of the replication stream: the CopyData payloads of START_REPLICATION (XLogData 'w',
// primary keepalive 'k') and, inside XLogData, pgoutput's logical messages of protocol version 1
// (Begin, Commit, Origin, Relation, Type, Insert, Update, Delete, Truncate). Column values stay
// in PostgreSQL's text form (`string`), `null` for NULL and UNCHANGED_TOAST for a TOASTed value an
// update left unchanged; the reader converts them to the oxbow column's type.

export const UNCHANGED_TOAST: unique symbol = Symbol('unchanged toast');
export type TupleValue = string | null | typeof UNCHANGED_TOAST;

export interface RelationColumn {
  readonly name: string;
  readonly typeOid: number;
  readonly typeMod: number;
  /** Part of the replica identity (the primary key with REPLICA IDENTITY DEFAULT). */
  readonly key: boolean;
}

export type PgOutputMessage =
  | { readonly tag: 'begin'; readonly finalLsn: bigint; readonly xid: number }
  | { readonly tag: 'commit'; readonly commitLsn: bigint; readonly endLsn: bigint; readonly timestamp: bigint }
  | { readonly tag: 'relation'; readonly oid: number; readonly schema: string; readonly name: string; readonly replicaIdentity: string; readonly columns: readonly RelationColumn[] }
  | { readonly tag: 'insert'; readonly oid: number; readonly tuple: TupleValue[] }
  | { readonly tag: 'update'; readonly oid: number; readonly old: TupleValue[] | undefined; readonly oldIsKey: boolean; readonly tuple: TupleValue[] }
  | { readonly tag: 'delete'; readonly oid: number; readonly old: TupleValue[]; readonly oldIsKey: boolean }
  | { readonly tag: 'truncate'; readonly oids: readonly number[] }
  | { readonly tag: 'other'; readonly kind: string };

export type ReplicationMessage =
  | { readonly tag: 'xlog'; readonly start: bigint; readonly walEnd: bigint; readonly data: Buffer }
  | { readonly tag: 'keepalive'; readonly walEnd: bigint; readonly replyRequested: boolean };

/** A CopyData payload of the replication stream. */
export function decodeReplication(payload: Buffer): ReplicationMessage | undefined {
  const kind = payload[0];
  if (kind === 0x77) return { tag: 'xlog', start: payload.readBigUInt64BE(1), walEnd: payload.readBigUInt64BE(9), data: payload.subarray(25) };
  if (kind === 0x6b) return { tag: 'keepalive', walEnd: payload.readBigUInt64BE(1), replyRequested: payload[17] === 1 };
  return undefined;
}

/** Microseconds from 1970 to PostgreSQL's epoch, 2000-01-01. */
const PG_EPOCH_MICROS = 946_684_800_000_000n;

/** A Standby Status Update ('r'): written, flushed and applied up to `flushed`. */
export function standbyStatus(written: bigint, flushed: bigint, replyRequested = false): Buffer {
  const message = Buffer.alloc(34);
  message[0] = 0x72;
  message.writeBigUInt64BE(written, 1);
  message.writeBigUInt64BE(flushed, 9);
  message.writeBigUInt64BE(flushed, 17);
  message.writeBigInt64BE(BigInt(Date.now()) * 1000n - PG_EPOCH_MICROS, 25);
  message[33] = replyRequested ? 1 : 0;
  return message;
}

class Cursor {
  at = 0;
  constructor(readonly data: Buffer) {}
  u8(): number {
    return this.data[this.at++]!;
  }
  i16(): number {
    const value = this.data.readInt16BE(this.at);
    this.at += 2;
    return value;
  }
  i32(): number {
    const value = this.data.readInt32BE(this.at);
    this.at += 4;
    return value;
  }
  u64(): bigint {
    const value = this.data.readBigUInt64BE(this.at);
    this.at += 8;
    return value;
  }
  string(): string {
    const end = this.data.indexOf(0, this.at);
    const value = this.data.toString('utf8', this.at, end);
    this.at = end + 1;
    return value;
  }
  tuple(): TupleValue[] {
    const count = this.i16();
    const values: TupleValue[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const kind = this.u8();
      if (kind === 0x6e) values[i] = null;
      else if (kind === 0x75) values[i] = UNCHANGED_TOAST;
      else if (kind === 0x74) {
        const length = this.i32();
        values[i] = this.data.toString('utf8', this.at, this.at + length);
        this.at += length;
      } else throw new Error(`pgoutput: unknown tuple value kind ${String.fromCharCode(kind)}`);
    }
    return values;
  }
}

/** One pgoutput message (the data of an XLogData). */
export function decodePgOutput(data: Buffer): PgOutputMessage {
  const cursor = new Cursor(data);
  const kind = String.fromCharCode(cursor.u8());
  switch (kind) {
    case 'B': {
      const finalLsn = cursor.u64();
      cursor.u64();
      return { tag: 'begin', finalLsn, xid: cursor.i32() };
    }
    case 'C': {
      cursor.u8();
      const commitLsn = cursor.u64();
      const endLsn = cursor.u64();
      return { tag: 'commit', commitLsn, endLsn, timestamp: cursor.u64() };
    }
    case 'R': {
      const oid = cursor.i32();
      const schema = cursor.string();
      const name = cursor.string();
      const replicaIdentity = String.fromCharCode(cursor.u8());
      const count = cursor.i16();
      const columns: RelationColumn[] = [];
      for (let i = 0; i < count; i++) {
        const flags = cursor.u8();
        const columnName = cursor.string();
        const typeOid = cursor.i32();
        columns.push({ name: columnName, typeOid, typeMod: cursor.i32(), key: (flags & 1) === 1 });
      }
      return { tag: 'relation', oid, schema, name, replicaIdentity, columns };
    }
    case 'I': {
      const oid = cursor.i32();
      cursor.u8(); // 'N'
      return { tag: 'insert', oid, tuple: cursor.tuple() };
    }
    case 'U': {
      const oid = cursor.i32();
      let marker = String.fromCharCode(cursor.u8());
      let old: TupleValue[] | undefined;
      let oldIsKey = false;
      if (marker === 'K' || marker === 'O') {
        oldIsKey = marker === 'K';
        old = cursor.tuple();
        marker = String.fromCharCode(cursor.u8());
      }
      return { tag: 'update', oid, old, oldIsKey, tuple: cursor.tuple() };
    }
    case 'D': {
      const oid = cursor.i32();
      const marker = String.fromCharCode(cursor.u8());
      return { tag: 'delete', oid, oldIsKey: marker === 'K', old: cursor.tuple() };
    }
    case 'T': {
      const count = cursor.i32();
      cursor.u8();
      const oids: number[] = [];
      for (let i = 0; i < count; i++) oids.push(cursor.i32());
      return { tag: 'truncate', oids };
    }
    default:
      // Origin 'O', Type 'Y' (text values need no type), logical decoding messages 'M'.
      return { tag: 'other', kind };
  }
}
