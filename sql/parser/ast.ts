// The parser's output contract. oxbow parses with PostgreSQL's own grammar (libpg-query) plus an
// extension layer for the clauses PostgreSQL lacks (see sql/parser/README.md for why). A statement
// is PostgreSQL's raw parse node (typed by @pgsql/types) or one of oxbow's own statement nodes
// below; oxbow's clauses inside PostgreSQL statements appear as extra fields on PostgreSQL nodes.
//
// Every `location` in the tree is a 0-based character offset into the ORIGINAL text given to
// parse() (not bytes, not the rewritten text), so errors report PostgreSQL's 1-based positions as
// location + 1.

import type { Node, RangeVar, ColumnDef as PgColumnDef } from '@pgsql/types';

export type { Node } from '@pgsql/types';

/** `FOR SYSTEM_TIME AS OF e` / `FOR SYSTEM_TIME BETWEEN a AND b` on a table reference. */
export type SystemTimeClause =
  | { readonly kind: 'asOf'; readonly at: Node; readonly location: number }
  | { readonly kind: 'between'; readonly from: Node; readonly to: Node; readonly location: number };

/**
 * Extra fields oxbow adds to PostgreSQL nodes:
 * - RangeVar.oxbowSystemTime?: SystemTimeClause
 * - ResTarget.oxbowExcept?: string[]  (RisingWave's `* EXCEPT (a, b)` on a star target, star-except.ts)
 * - SelectStmt.oxbowCorresponding?: CorrespondingClause  (a set operation's `CORRESPONDING [BY (cols)]`,
 *   corresponding.ts)
 * - SelectStmt / CreateTableAsStmt .oxbowEmitOnWindowClose?: true  (on a CreateTableAsStmt, also on
 *   its query's SelectStmt)
 * - CreateStmt.oxbowConnector?: ConnectorSpec  (CREATE TABLE ... WITH (connector = ...) FORMAT ... ENCODE ...)
 * - CreateStmt.oxbowAppendOnly?: true  (RisingWave's `CREATE TABLE ... APPEND ONLY`)
 * - CreateStmt.oxbowOnConflict?: string  (RisingWave's table-level `ON CONFLICT OVERWRITE | IGNORE |
 *   DO NOTHING | DO UPDATE FULL | DO UPDATE IF NOT NULL`, lower-cased words: 'overwrite', 'do nothing'...)
 * - CreateStmt.oxbowWatermark?: Watermark  (`WATERMARK FOR col AS expr` in a table's column list)
 * - TypeName.oxbowStructFields?: ColumnDef[]  (`STRUCT<a int, b varchar>`: the TypeName is named
 *   `struct`, the fields are column definitions, nested structs nest)
 * - DropStmt.oxbowObjectType?: 'source' | 'sink'  (DROP SOURCE / DROP SINK arrive as PostgreSQL's
 *   DropStmt with removeType OBJECT_TABLE / OBJECT_VIEW; this field names the real kind). The same
 *   field marks ALTER SOURCE / ALTER SINK, which arrive as ALTER TABLE / ALTER VIEW statements
 *   (RenameStmt, AlterOwnerStmt, AlterObjectSchemaStmt, AlterTableStmt).
 * - FetchStmt.oxbowOptions?: Record<string, string>  (`FETCH ... WITH (timeout = '1s')`, Materialize's
 *   and RisingWave's wait for a subscription cursor; lower-cased keys, values as text; subscribe.ts)
 * A RisingWave generated column `col type AS expr` arrives as PostgreSQL's
 * `GENERATED ALWAYS AS (expr) STORED` constraint (CONSTR_GENERATED).
 */
export interface ConnectorSpec {
  /** WITH options; dotted keys kept as written (`properties.bootstrap.server`), values as text. */
  readonly options: Readonly<Record<string, string>>;
  readonly format?: string;
  readonly encode?: string;
  /** FORMAT ... ENCODE ... ( key = 'value', ... ) */
  readonly encodeOptions?: Readonly<Record<string, string>>;
  /** INCLUDE partition|offset|timestamp|key [AS name] */
  readonly include?: readonly { readonly what: string; readonly alias?: string }[];
  /** RisingWave's shared CDC source: `CREATE TABLE t (...) FROM source TABLE 'schema.table'`. */
  readonly fromSource?: { readonly source: string; readonly table: string };
}

/** `WATERMARK FOR col AS expr` */
export interface Watermark {
  readonly column: string;
  readonly expr: Node;
}

export interface OxbowCreateSource {
  readonly relation: RangeVar;
  readonly ifNotExists: boolean;
  readonly columns: readonly PgColumnDef[];
  /** Table-level PRIMARY KEY (col, ...) if given. */
  readonly primaryKey?: readonly string[];
  readonly connector: ConnectorSpec;
  /** WATERMARK FOR col AS expr */
  readonly watermark?: { readonly column: string; readonly expr: Node };
}

export interface OxbowCreateSink {
  readonly name: RangeVar;
  readonly ifNotExists: boolean;
  /** CREATE SINK s FROM relation ... */
  readonly from?: RangeVar;
  /** CREATE SINK s AS SELECT ... */
  readonly query?: Node;
  readonly connector: ConnectorSpec;
}

export type ShowObjectType =
  | 'tables'
  | 'materialized views'
  | 'views'
  | 'sources'
  | 'sinks'
  | 'subscriptions'
  | 'schemas'
  | 'databases'
  | 'functions'
  | 'columns'
  | 'indexes';

/** SHOW TABLES | MATERIALIZED VIEWS | ... [FROM|IN schema] [LIKE 'p'];  SHOW COLUMNS | INDEXES FROM relation */
export interface OxbowShowObjects {
  readonly objectType: ShowObjectType;
  /** The schema (listings) or relation (columns, indexes) after FROM / IN, as name parts. */
  readonly from?: readonly string[];
  /** LIKE 'pattern' */
  readonly like?: string;
}

export type ShowCreateObjectType = 'table' | 'materialized view' | 'view' | 'source' | 'sink' | 'index';

/** SHOW CREATE TABLE | MATERIALIZED VIEW | VIEW | SOURCE | SINK | INDEX name */
export interface OxbowShowCreate {
  readonly objectType: ShowCreateObjectType;
  readonly name: RangeVar;
}

/** DESCRIBE relation */
export interface OxbowDescribe {
  readonly relation: RangeVar;
}

/** EXPLAIN ANALYZE [MATERIALIZED VIEW] name: the running view's operators with their counters. */
export interface OxbowExplainAnalyzeView {
  readonly relation: RangeVar;
  /** false for `EXPLAIN [MATERIALIZED VIEW] name`: the view's plan, not its running counters. */
  readonly analyze?: false;
}

/**
 * SUBSCRIBE [TO] name | (query) [AS OF e] [WITH (...)], alone or as `COPY (SUBSCRIBE ...) TO STDOUT`
 * (sql/parser/subscribe.ts).
 */
export interface OxbowSubscribe {
  readonly relation?: RangeVar;
  /** SUBSCRIBE (query): the query as PostgreSQL parses it, and its text. */
  readonly query?: Node;
  readonly queryText?: string;
  /** AS OF: an integer literal is an epoch number, anything else a moment (timestamp). */
  readonly asOf?: Node;
  readonly asOfLocation?: number;
  /** WITH (PROGRESS, SNAPSHOT = false): lower-cased keys, values as written ('' without a value). */
  readonly options: Readonly<Record<string, string>>;
  /** Set for the COPY form: COPY's own options (FORMAT text only). */
  readonly copyOptions?: Readonly<Record<string, string>>;
}

/** CREATE SUBSCRIPTION [IF NOT EXISTS] name FROM relation [WITH (retention = ...)] (RisingWave's form). */
export interface OxbowCreateSubscription {
  readonly name: RangeVar;
  readonly from: RangeVar;
  readonly ifNotExists: boolean;
  readonly options: Readonly<Record<string, string>>;
}

/**
 * DECLARE name CURSOR [WITH HOLD | WITHOUT HOLD] FOR SUBSCRIBE ... (Materialize's cursor over a
 * subscription; sql/parser/subscribe.ts).
 */
export interface OxbowDeclareSubscribe {
  readonly name: string;
  readonly hold: boolean;
  readonly subscribe: OxbowSubscribe;
}

/** Where a subscription cursor starts: SINCE now() / proctime() (the default), begin(), unix_ms, or FULL. */
export type SubscriptionCursorStart = { readonly kind: 'now' } | { readonly kind: 'begin' } | { readonly kind: 'full' } | { readonly kind: 'millis'; readonly millis: string };

/** DECLARE name SUBSCRIPTION CURSOR FOR subscription [SINCE ... | FULL] (RisingWave's form). */
export interface OxbowDeclareSubscriptionCursor {
  readonly name: string;
  readonly subscription: RangeVar;
  readonly start: SubscriptionCursorStart;
  /** 0-based offset of the SINCE value, when one is given. */
  readonly startLocation?: number;
}

/** DROP SUBSCRIPTION [IF EXISTS] name [, ...] */
export interface OxbowDropSubscription {
  readonly names: readonly RangeVar[];
  readonly missingOk: boolean;
}

export type OxbowNode =
  | { readonly OxbowCreateSource: OxbowCreateSource }
  | { readonly OxbowCreateSink: OxbowCreateSink }
  | { readonly OxbowFlush: Record<string, never> }
  | { readonly OxbowShowObjects: OxbowShowObjects }
  | { readonly OxbowShowCreate: OxbowShowCreate }
  | { readonly OxbowDescribe: OxbowDescribe }
  | { readonly OxbowExplainAnalyzeView: OxbowExplainAnalyzeView }
  | { readonly OxbowSubscribe: OxbowSubscribe }
  | { readonly OxbowCreateSubscription: OxbowCreateSubscription }
  | { readonly OxbowDropSubscription: OxbowDropSubscription }
  | { readonly OxbowDeclareSubscribe: OxbowDeclareSubscribe }
  | { readonly OxbowDeclareSubscriptionCursor: OxbowDeclareSubscriptionCursor };

export interface ParsedStatement {
  readonly node: Node | OxbowNode;
  /** This statement's own text (without the trailing semicolon). */
  readonly text: string;
  /** 0-based character offset of `text` in the original input. */
  readonly location: number;
}
