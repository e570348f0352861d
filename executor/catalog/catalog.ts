// The durable catalog: schemas, relations (tables, views, materialized views, sources, sinks,
// indexes, and the built-in system relations) and SQL functions, their ids, and the dependencies between them. It
// implements the planner's CatalogReader.
//
// The catalog's state is an immutable snapshot. A DDL statement builds the next snapshot with a
// CatalogDraft, writes it as JSON into the StateStore's metadata (key `catalog`) and commits it in
// the same atomic write as the statement's epoch; only after the commit succeeds does the
// in-memory catalog switch to the new snapshot. So a failed DDL changes nothing, and a restart
// reads back exactly the committed catalog.

import type { FunctionDef, RelationDef, RoleDef, SchemaDef } from '../../sql/catalog.js';
import type { CatalogReader } from '../../planner/catalog-reader.js';
import type { StateStore } from '../../storage/state-table.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import { secondaryIndexes } from './secondary-index.js';

/** Built-in schemas, with PostgreSQL's OIDs where PostgreSQL has them. */
export const BUILTIN_SCHEMAS: readonly SchemaDef[] = [
  { id: 11, name: 'pg_catalog', comment: 'system catalog schema' },
  { id: 2200, name: 'public', comment: 'standard public schema' },
  { id: 13000, name: 'information_schema' },
  { id: 13001, name: 'oxbow_catalog', comment: 'oxbow system relations' },
];

/** The bootstrap superuser's id (PostgreSQL's BOOTSTRAP_SUPERUSERID): owner of what has no other. */
export const BOOTSTRAP_ROLE_ID = 10;
/** The predefined role that owns `public` in PostgreSQL 15. */
export const DATABASE_OWNER_ROLE_ID = 6171;

/** The superuser every catalog starts with: it logs in, and cannot be dropped. */
export const BOOTSTRAP_ROLE: RoleDef = { id: BOOTSTRAP_ROLE_ID, name: 'oxbow', superuser: true, inherit: true, createRole: true, createDb: true, login: true, replication: true, bypassRls: true, memberOf: [] };
/** pg_database_owner: no login, no members listed (its member is the database's owner). */
const DATABASE_OWNER_ROLE: RoleDef = { id: DATABASE_OWNER_ROLE_ID, name: 'pg_database_owner', superuser: false, inherit: true, createRole: false, createDb: false, login: false, memberOf: [] };

/** First id for user objects: PostgreSQL's FirstNormalObjectId. */
export const FIRST_USER_ID = 16384;
/** The hidden column a table without a primary key is keyed by (its row id). */
export const ROW_ID_COLUMN = '_row_id';

const CATALOG_META_KEY = 'catalog';
const FORMAT_VERSION = 1;

interface SerializedCatalog {
  readonly version: number;
  readonly nextId: number;
  readonly schemas: readonly SchemaDef[];
  readonly relations: readonly RelationDef[];
  /** SQL functions (absent in catalogs written before they existed). */
  readonly functions?: readonly FunctionDef[];
  /** Roles (absent in catalogs written before roles existed: the bootstrap superuser only). */
  readonly roles?: readonly RoleDef[];
}

/** One immutable state of the catalog. */
export class CatalogSnapshot {
  readonly nextId: number;
  private readonly schemasByName: ReadonlyMap<string, SchemaDef>;
  private readonly relationsById: ReadonlyMap<number, RelationDef>;
  /** `schema\0name` to id. */
  private readonly relationsByName: ReadonlyMap<string, number>;
  /** Relation id to the ids of relations that depend on it. */
  private readonly dependentsById: ReadonlyMap<number, readonly number[]>;
  private readonly functionsById: ReadonlyMap<number, FunctionDef>;
  /** `schema\0name` to the overloads of that name. */
  private readonly functionsByName: ReadonlyMap<string, readonly FunctionDef[]>;
  /** Function id to the functions whose (`RETURN` form) body calls it. */
  private readonly functionDependentsById: ReadonlyMap<number, readonly FunctionDef[]>;

  private readonly rolesById: ReadonlyMap<number, RoleDef>;
  private readonly rolesByName: ReadonlyMap<string, RoleDef>;

  constructor(nextId: number, schemas: Iterable<SchemaDef>, relations: Iterable<RelationDef>, functions: Iterable<FunctionDef> = [], roles: Iterable<RoleDef> = [BOOTSTRAP_ROLE, DATABASE_OWNER_ROLE]) {
    this.nextId = nextId;
    const rolesById = new Map<number, RoleDef>();
    const rolesByName = new Map<string, RoleDef>();
    for (const role of roles) {
      rolesById.set(role.id, role);
      rolesByName.set(role.name, role);
    }
    this.rolesById = rolesById;
    this.rolesByName = rolesByName;
    const functionsById = new Map<number, FunctionDef>();
    const functionsByName = new Map<string, FunctionDef[]>();
    const functionDependentsById = new Map<number, FunctionDef[]>();
    for (const fn of functions) {
      functionsById.set(fn.id, fn);
      const key = `${fn.schema}\0${fn.name}`;
      let overloads = functionsByName.get(key);
      if (overloads === undefined) functionsByName.set(key, (overloads = []));
      overloads.push(fn);
      for (const dependency of new Set(fn.dependsOn)) {
        let list = functionDependentsById.get(dependency);
        if (list === undefined) functionDependentsById.set(dependency, (list = []));
        list.push(fn);
      }
    }
    this.functionsById = functionsById;
    this.functionsByName = functionsByName;
    this.functionDependentsById = functionDependentsById;
    const schemasByName = new Map<string, SchemaDef>();
    for (const schema of schemas) schemasByName.set(schema.name, schema);
    const relationsById = new Map<number, RelationDef>();
    const relationsByName = new Map<string, number>();
    const dependentsById = new Map<number, number[]>();
    for (const relation of relations) {
      relationsById.set(relation.id, relation);
      relationsByName.set(`${relation.schema}\0${relation.name}`, relation.id);
      const reads = relation.indexOn === undefined ? relation.dependsOn : [...relation.dependsOn, relation.indexOn.relationId];
      for (const dependency of new Set(reads)) {
        let list = dependentsById.get(dependency);
        if (list === undefined) dependentsById.set(dependency, (list = []));
        list.push(relation.id);
      }
    }
    this.schemasByName = schemasByName;
    this.relationsById = relationsById;
    this.relationsByName = relationsByName;
    this.dependentsById = dependentsById;
  }

  schema(name: string): SchemaDef | undefined {
    return this.schemasByName.get(name);
  }

  role(name: string): RoleDef | undefined {
    return this.rolesByName.get(name);
  }

  roleById(id: number): RoleDef | undefined {
    return this.rolesById.get(id);
  }

  /** Every role, in id order. */
  roles(): RoleDef[] {
    return [...this.rolesById.values()].sort((a, b) => a.id - b.id);
  }

  schemaById(id: number): SchemaDef | undefined {
    for (const schema of this.schemasByName.values()) if (schema.id === id) return schema;
    return undefined;
  }

  schemas(): SchemaDef[] {
    return [...this.schemasByName.values()];
  }

  relation(schema: string, name: string): RelationDef | undefined {
    const id = this.relationsByName.get(`${schema}\0${name}`);
    return id === undefined ? undefined : this.relationsById.get(id);
  }

  relationById(id: number): RelationDef | undefined {
    return this.relationsById.get(id);
  }

  relations(): RelationDef[] {
    return [...this.relationsById.values()];
  }

  /** Secondary indexes on a relation (CREATE INDEX; not the primary key's): the planner's index_lookup. */
  indexesOf(relationId: number): RelationDef[] {
    return secondaryIndexes(this, relationId);
  }

  /** Relations that read `id` directly (views, indexes, sinks). */
  dependents(id: number): RelationDef[] {
    const ids = this.dependentsById.get(id) ?? [];
    return ids.map((dependent) => this.relationsById.get(dependent)!);
  }

  functionById(id: number): FunctionDef | undefined {
    return this.functionsById.get(id);
  }

  functions(): FunctionDef[] {
    return [...this.functionsById.values()];
  }

  /** The overloads named `name` in `schema`, or in every schema of the search path (nearest first). */
  resolveFunctions(schema: string | undefined, name: string, searchPath: readonly string[]): readonly FunctionDef[] {
    if (this.functionsById.size === 0) return [];
    if (schema !== undefined) return this.functionsByName.get(`${schema}\0${name}`) ?? [];
    const found: FunctionDef[] = [];
    for (const candidate of this.effectiveSearchPath(searchPath)) found.push(...(this.functionsByName.get(`${candidate}\0${name}`) ?? []));
    return found;
  }

  /** Functions whose body calls function `id`. */
  functionDependents(id: number): readonly FunctionDef[] {
    return this.functionDependentsById.get(id) ?? [];
  }

  /** The effective search path: pg_catalog first unless listed, then the listed schemas that exist. */
  effectiveSearchPath(searchPath: readonly string[]): string[] {
    const path = searchPath.includes('pg_catalog') ? [] : ['pg_catalog'];
    for (const schema of searchPath) if (this.schemasByName.has(schema)) path.push(schema);
    return path;
  }

  resolveRelation(schema: string | undefined, name: string, searchPath: readonly string[]): RelationDef | undefined {
    if (schema !== undefined) return this.relation(schema, name);
    for (const candidate of this.effectiveSearchPath(searchPath)) {
      const found = this.relation(candidate, name);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  serialize(): Uint8Array {
    // Every schema is stored, built-in ones too, so that a dropped `public` stays dropped.
    const value: SerializedCatalog = {
      version: FORMAT_VERSION,
      nextId: this.nextId,
      schemas: this.schemas(),
      relations: this.relations().filter((relation) => relation.kind !== 'system'),
      ...(this.functionsById.size === 0 ? {} : { functions: this.functions() }),
      roles: this.roles(),
    };
    return new TextEncoder().encode(JSON.stringify(value));
  }
}

/** Schemas that always exist (their relations are built in). */
const SYSTEM_SCHEMA_NAMES = new Set(['pg_catalog', 'information_schema', 'oxbow_catalog']);

/** A mutable copy of a snapshot that one DDL statement edits, then turns into the next snapshot. */
export class CatalogDraft {
  private nextId: number;
  private readonly schemas: Map<string, SchemaDef>;
  private readonly relations: Map<number, RelationDef>;
  private readonly functions: Map<number, FunctionDef>;
  private readonly roles: Map<number, RoleDef>;

  constructor(base: CatalogSnapshot) {
    this.roles = new Map(base.roles().map((role) => [role.id, role]));
    this.nextId = base.nextId;
    this.schemas = new Map(base.schemas().map((schema) => [schema.name, schema]));
    this.relations = new Map(base.relations().map((relation) => [relation.id, relation]));
    this.functions = new Map(base.functions().map((fn) => [fn.id, fn]));
  }

  allocateId(): number {
    return this.nextId++;
  }

  putSchema(schema: SchemaDef): void {
    this.schemas.set(schema.name, schema);
  }

  removeSchema(name: string): void {
    this.schemas.delete(name);
  }

  /** Adds or replaces a relation; a new one is stamped with its creation time, a replaced one keeps it. */
  putRelation(relation: RelationDef): void {
    const createdAtMillis = relation.createdAtMillis ?? this.relations.get(relation.id)?.createdAtMillis ?? Date.now();
    this.relations.set(relation.id, relation.createdAtMillis === createdAtMillis ? relation : { ...relation, createdAtMillis });
  }

  removeRelation(id: number): void {
    this.relations.delete(id);
  }

  /** Adds or replaces a SQL function (a replaced one keeps its creation time). */
  putFunction(fn: FunctionDef): void {
    const createdAtMillis = fn.createdAtMillis ?? this.functions.get(fn.id)?.createdAtMillis ?? Date.now();
    this.functions.set(fn.id, { ...fn, createdAtMillis });
  }

  removeFunction(id: number): void {
    this.functions.delete(id);
  }

  /** Adds or replaces a role (by id). */
  putRole(role: RoleDef): void {
    this.roles.set(role.id, role);
  }

  removeRole(id: number): void {
    this.roles.delete(id);
  }

  finish(): CatalogSnapshot {
    return new CatalogSnapshot(this.nextId, this.schemas.values(), this.relations.values(), this.functions.values(), this.roles.values());
  }
}

/** The live catalog of an engine: the current snapshot plus how to persist the next one. */
export class Catalog implements CatalogReader {
  private current: CatalogSnapshot;

  private constructor(snapshot: CatalogSnapshot) {
    this.current = snapshot;
  }

  /** Reads the committed catalog from the store's metadata (an empty one on a fresh store). */
  static load(store: StateStore, systemRelations: readonly RelationDef[]): Catalog {
    const stored = store.getMeta(CATALOG_META_KEY);
    let nextId = FIRST_USER_ID;
    const schemas = new Map<string, SchemaDef>(BUILTIN_SCHEMAS.map((schema) => [schema.name, schema]));
    const relations: RelationDef[] = [...systemRelations];
    const functions: FunctionDef[] = [];
    let roles: readonly RoleDef[] = [BOOTSTRAP_ROLE, DATABASE_OWNER_ROLE];
    if (stored !== undefined) {
      const value = JSON.parse(new TextDecoder().decode(stored)) as SerializedCatalog;
      if (value.version !== FORMAT_VERSION) {
        throw new SqlError(SqlState.dataCorrupted, `unsupported catalog format version ${value.version}`);
      }
      nextId = value.nextId;
      for (const name of [...schemas.keys()]) if (!SYSTEM_SCHEMA_NAMES.has(name)) schemas.delete(name);
      for (const schema of value.schemas) schemas.set(schema.name, schema);
      relations.push(...value.relations);
      functions.push(...(value.functions ?? []));
      roles = value.roles ?? roles;
    }
    return new Catalog(new CatalogSnapshot(nextId, schemas.values(), relations, functions, roles));
  }

  get snapshot(): CatalogSnapshot {
    return this.current;
  }

  draft(): CatalogDraft {
    return new CatalogDraft(this.current);
  }

  /** Buffers the snapshot into the store's open epoch; call `install` once the epoch committed. */
  stage(store: StateStore, next: CatalogSnapshot): void {
    store.putMeta(CATALOG_META_KEY, next.serialize());
  }

  install(next: CatalogSnapshot): void {
    this.current = next;
  }

  resolveRelation(schema: string | undefined, name: string, searchPath: readonly string[]): RelationDef | undefined {
    return this.current.resolveRelation(schema, name, searchPath);
  }

  relationById(id: number): RelationDef | undefined {
    return this.current.relationById(id);
  }

  schema(name: string): SchemaDef | undefined {
    return this.current.schema(name);
  }

  indexesOf(relationId: number): RelationDef[] {
    return this.current.indexesOf(relationId);
  }

  resolveFunctions(schema: string | undefined, name: string, searchPath: readonly string[]): readonly FunctionDef[] {
    return this.current.resolveFunctions(schema, name, searchPath);
  }
}
