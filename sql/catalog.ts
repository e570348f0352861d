// The catalog model: the descriptions of schemas, tables, views, sources, sinks and indexes that
// every layer shares. Plain data, serialisable to JSON (the durable catalog log stores it), no
// behaviour beyond small lookups. The catalog itself (mutation, persistence, dependency tracking)
// lives in executor/; planner/ reads it through its own CatalogReader interface.

import type { DataType } from './types.js';

export type RelationKind = 'table' | 'view' | 'materialized_view' | 'source' | 'sink' | 'subscription' | 'index' | 'sequence' | 'system';

export interface ColumnDef {
  readonly name: string;
  readonly type: DataType;
  readonly nullable: boolean;
  /** Hidden columns (the row id of a table without a primary key) are not in SELECT *. */
  readonly hidden: boolean;
  /** Default expression as SQL text, if any. */
  readonly defaultSql?: string;
  /** COMMENT ON COLUMN text, if any. */
  readonly comment?: string;
  /**
   * GENERATED ALWAYS / BY DEFAULT AS IDENTITY: the column's values come from its own sequence
   * (`sequenceId`); it has no `defaultSql` (PostgreSQL keeps no pg_attrdef row for it).
   */
  readonly identity?: { readonly kind: 'always' | 'by default'; readonly sequenceId: number };
}

/** The expression that fills a column left out of an INSERT: an identity column's nextval, else its DEFAULT. */
export function columnDefaultSql(column: ColumnDef): string | undefined {
  return column.identity === undefined ? column.defaultSql : `nextval('${column.identity.sequenceId}'::regclass)`;
}

/**
 * A sequence's options (CREATE SEQUENCE; serial and identity columns make one). Numbers are
 * decimal text: the catalog is JSON, and int8 bounds do not fit a double.
 */
export interface SequenceDef {
  readonly dataType: 'int2' | 'int4' | 'int8';
  readonly start: string;
  readonly increment: string;
  readonly min: string;
  readonly max: string;
  readonly cache: string;
  readonly cycle: boolean;
  /** OWNED BY table.column: dropped with the table (or the column). */
  readonly ownedBy?: { readonly relationId: number; readonly column: number };
}

/** A table constraint beyond PRIMARY KEY, NOT NULL and CHECK: UNIQUE (backed by its index) or FOREIGN KEY. */
export interface ConstraintDef {
  readonly name: string;
  readonly kind: 'unique' | 'foreign_key';
  /** Indexes into the table's columns. */
  readonly columns: readonly number[];
  /** UNIQUE: the index that enforces it (its id). */
  readonly indexId?: number;
  /** FOREIGN KEY: the referenced table, its columns, the actions (PostgreSQL's letters a r c n d) and match type. */
  readonly references?: {
    readonly relationId: number;
    readonly columns: readonly number[];
    readonly onUpdate: string;
    readonly onDelete: string;
    readonly match: string;
    /** DEFERRABLE [INITIALLY DEFERRED]: recorded; checked at the end of each statement all the same. */
    readonly deferrable?: boolean;
    readonly initiallyDeferred?: boolean;
  };
}

export interface RelationDef {
  /** Unique, never reused; also the storage table id of the relation's rows (tables, views). */
  readonly id: number;
  readonly kind: RelationKind;
  readonly schema: string;
  readonly name: string;
  readonly columns: readonly ColumnDef[];
  /** Indexes into `columns` of the primary key (for a table without one: the hidden row id). */
  readonly primaryKey: readonly number[];
  /** The defining query text for views and materialized views. */
  readonly definition?: string;
  /** Connector options (`WITH (...)`), FORMAT and ENCODE, for sources, sinks and connector tables. */
  readonly options?: Readonly<Record<string, string>>;
  readonly format?: string;
  readonly encode?: string;
  /** For connector relations: Kafka metadata columns (`INCLUDE partition|offset|timestamp|key`) and the column each fills. */
  readonly include?: readonly { readonly what: string; readonly column: string }[];
  /** Ids of the relations this one reads (views, indexes, sinks), and of the SQL functions a view calls. */
  readonly dependsOn: readonly number[];
  /**
   * For materialized views: the ids of the dataflow's state tables (in the order the
   * incrementalization pass allocates them) and the search path the definition was planned with,
   * so a restart rebuilds the same dataflow over the same state; `planVersion` (absent: 1) is the
   * streaming plan version it was created with (planner/stream STREAM_PLAN_VERSION). `changeLog`
   * (a sink AS query): the state table its dataflow writes its changes to in epoch order, read and
   * trimmed by the sink's deliveries (executor/connectors/sink-log.ts), and whether the sink's
   * rows are kept besides (not for an append-only query, whose contents the log holds).
   */
  readonly stream?: {
    readonly stateTableIds: readonly number[];
    readonly searchPath: readonly string[];
    readonly planVersion?: number;
    readonly changeLog?: { readonly tableId: number; readonly rowsKept: boolean };
  };
  /**
   * A source that stores no rows (executor/connectors/source-replay.ts): its state table holds only its
   * committed position per split, and every read (SELECT, a view's backfill, AS OF) replays the
   * events below that position. Set at CREATE for deterministic generator sources.
   */
  readonly replayed?: boolean;
  /** Time-travel retention in milliseconds; undefined means the server default. */
  readonly retentionMs?: number;
  /** `WATERMARK FOR col AS col - interval 'delay'` (tables, sources): the column index and the delay as interval text. */
  readonly watermark?: { readonly column: number; readonly delay: string };
  readonly comment?: string;
  /** When the object was created (milliseconds since 1970; stamped by the catalog draft, oxbow_catalog.objects). */
  readonly createdAtMillis?: number;
  /** For kind === 'sequence': its options. */
  readonly sequence?: SequenceDef;
  /** UNIQUE and FOREIGN KEY constraints of a table, in creation order. */
  readonly constraints?: readonly ConstraintDef[];
  /** CHECK constraints of a table: name and the expression as SQL text, in name order. */
  readonly checks?: readonly { readonly name: string; readonly sql: string }[];
  /** The owning role's id (absent: the bootstrap superuser, id 10). */
  readonly owner?: number;
  /** GRANTed privileges (absent: the default, the owner's only). */
  readonly acl?: readonly AclItem[];
  /** For kind === 'index': the indexed relation and the key columns (indexes into its columns). */
  readonly indexOn?: {
    readonly relationId: number;
    readonly columns: readonly number[];
    /** UNIQUE index; `primary` marks the index that backs a table's PRIMARY KEY (t_pkey). */
    readonly unique?: boolean;
    readonly primary?: boolean;
    /**
     * The index has its own state table (id = the index's id; executor/catalog/secondary-index.ts), kept in
     * step with the table and read by lookups. Indexes created before indexes were stored lack it.
     */
    readonly stored?: boolean;
  };
}

export interface SchemaDef {
  readonly id: number;
  readonly name: string;
  readonly comment?: string;
  /** The owning role's id (absent: the bootstrap superuser, or pg_database_owner for `public`). */
  readonly owner?: number;
  /** GRANTed privileges (absent: the default ACL). */
  readonly acl?: readonly AclItem[];
}

/**
 * One entry of an object's access control list, as PostgreSQL's aclitem: the grantee (0 for
 * PUBLIC), the grantor, and the privileges as PostgreSQL's letters (relations `arwdDxt`, schemas
 * `UC`), in that order.
 */
export interface AclItem {
  readonly grantee: number;
  readonly grantor: number;
  readonly privileges: string;
}

/**
 * A role (CREATE ROLE / USER), as pg_authid: its attributes, its SCRAM-SHA-256 verifier
 * (`SCRAM-SHA-256$4096:salt$StoredKey:ServerKey`, never the password) and the roles it is a member
 * of (pg_auth_members).
 */
export interface RoleDef {
  readonly id: number;
  readonly name: string;
  readonly superuser: boolean;
  readonly inherit: boolean;
  readonly createRole: boolean;
  readonly createDb: boolean;
  readonly login: boolean;
  /** REPLICATION and BYPASSRLS: kept for pg_roles and pg_dumpall (oxbow has no replication connections and no row security). */
  readonly replication?: boolean;
  readonly bypassRls?: boolean;
  readonly password?: string;
  readonly memberOf: readonly { readonly roleId: number; readonly grantor: number }[];
}

/**
 * A SQL-language scalar function (`CREATE FUNCTION ... LANGUAGE SQL`). Calls are inlined at bind
 * time (planner/binder/sql-function.ts): the body is one expression over the arguments.
 */
export interface FunctionDef {
  /** From the relations' id space (never reused); pg_proc's oid. */
  readonly id: number;
  readonly schema: string;
  readonly name: string;
  /** Argument names ('' when unnamed; `$n` always works). */
  readonly argumentNames: readonly string[];
  readonly argumentTypes: readonly DataType[];
  /** Without a typmod, as PostgreSQL keeps function result types. */
  readonly returnType: DataType;
  readonly volatility: 'immutable' | 'stable' | 'volatile';
  /** STRICT / RETURNS NULL ON NULL INPUT: NULL when any argument is NULL. */
  readonly strict: boolean;
  /** The body as a query text: `SELECT expr` (the `AS $$...$$` text, or `SELECT` + a `RETURN` form's expression). */
  readonly body: string;
  /** pg_proc.prosrc: the `AS` string ('' for the SQL-standard `RETURN` form, as PostgreSQL shows it). */
  readonly source: string;
  /** Ids of the functions the body calls (the `RETURN` form only, as in PostgreSQL). */
  readonly dependsOn: readonly number[];
  readonly createdAtMillis?: number;
  /** The owning role's id (absent: the bootstrap superuser). */
  readonly owner?: number;
}
