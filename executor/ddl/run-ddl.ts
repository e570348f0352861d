// Dispatch of DDL statements to their handlers (one file per group of statements). The session
// runs the handler inside the write lock and commits the catalog it returns.

import type { AlterRoleStmt, CreateRoleStmt, DropOwnedStmt, DropRoleStmt, GrantRoleStmt, GrantStmt, ReassignOwnedStmt, AlterOwnerStmt, AlterSeqStmt, CreateSeqStmt, AlterTableStmt, RenameStmt, CommentStmt, CreateFunctionStmt, CreateSchemaStmt, CreateStmt, CreateTableAsStmt, DropStmt, IndexStmt, ViewStmt } from '@pgsql/types';
import type { ConnectorSpec, OxbowCreateSink, OxbowCreateSource, OxbowCreateSubscription, OxbowDropSubscription, ParsedStatement } from '../../sql/parser/ast.js';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { DdlContext, DdlOutcome } from './ddl-context.js';
import { createTable } from './create-table.js';
import { createIndex, createSchema, createView } from './create-objects.js';
import { drop } from './drop.js';
import { createFunction, dropFunction } from './function.js';
import { alterTable, commentOn } from './alter-and-comment.js';
import { createConnectorTable, createSource } from './create-source.js';
import { createSink } from './create-sink.js';
import { createSubscription, dropSubscription } from './create-subscription.js';
import { alterObjectOwner } from './alter-constraints.js';
import { renameRelation } from './rename.js';
import { alterSequence, createSequence } from './sequence.js';
import { alterRole, createRole, dropOwned, dropRole, grantRole, reassignOwned, renameRole } from './roles.js';
import { grantPrivileges } from './grant.js';

const ddlKinds = new Set([
  'CreateStmt',
  'CreateSchemaStmt',
  'ViewStmt',
  'IndexStmt',
  'DropStmt',
  'AlterTableStmt',
  'CommentStmt',
  'CreateTableAsStmt',
  'OxbowCreateSource',
  'OxbowCreateSink',
  'CreateFunctionStmt',
  'OxbowCreateSubscription',
  'OxbowDropSubscription',
  'AlterOwnerStmt',
  'RenameStmt',
  'CreateSeqStmt',
  'AlterSeqStmt',
  'CreateRoleStmt',
  'AlterRoleStmt',
  'DropRoleStmt',
  'GrantRoleStmt',
  'GrantStmt',
  'ReassignOwnedStmt',
  'DropOwnedStmt',
]);

export function isDdl(kind: string): boolean {
  return ddlKinds.has(kind);
}

const streamingLater = 'the streaming engine arrives in a later release';

export function runDdl(statement: ParsedStatement, context: DdlContext): DdlOutcome {
  const node = statement.node as Record<string, unknown>;
  const kind = Object.keys(node)[0]!;
  const body = node[kind];
  switch (kind) {
    case 'CreateStmt': {
      const connector = (body as { oxbowConnector?: ConnectorSpec }).oxbowConnector;
      if (connector !== undefined) return createConnectorTable(body as CreateStmt, connector, context);
      return createTable(body as CreateStmt, context);
    }
    case 'CreateSchemaStmt':
      return createSchema(body as CreateSchemaStmt, context);
    case 'ViewStmt':
      return createView(body as ViewStmt, context);
    case 'IndexStmt':
      return createIndex(body as IndexStmt, context);
    case 'DropStmt':
      if ((body as DropStmt).removeType === 'OBJECT_FUNCTION') return dropFunction(body as DropStmt, context);
      return drop(body as DropStmt, context);
    case 'CreateFunctionStmt':
      return createFunction(body as CreateFunctionStmt, context);
    case 'AlterTableStmt':
      return alterTable(body as AlterTableStmt, context);
    case 'CommentStmt':
      return commentOn(body as CommentStmt, context);
    case 'AlterOwnerStmt':
      return alterObjectOwner(body as AlterOwnerStmt, context);
    case 'RenameStmt':
      if ((body as RenameStmt).renameType === 'OBJECT_ROLE') return renameRole(body as RenameStmt, context);
      return renameRelation(body as RenameStmt, context);
    case 'CreateRoleStmt':
      return createRole(body as CreateRoleStmt, context);
    case 'AlterRoleStmt':
      return alterRole(body as AlterRoleStmt, context);
    case 'DropRoleStmt':
      return dropRole(body as DropRoleStmt, context);
    case 'GrantRoleStmt':
      return grantRole(body as GrantRoleStmt, context);
    case 'GrantStmt':
      return grantPrivileges(body as GrantStmt, context);
    case 'ReassignOwnedStmt':
      return reassignOwned(body as ReassignOwnedStmt, context);
    case 'DropOwnedStmt':
      return dropOwned(body as DropOwnedStmt, context);
    case 'CreateTableAsStmt': {
      const objectType = (body as CreateTableAsStmt).objtype;
      // CREATE TABLE AS runs in the session (it needs the query's rows); here only the streaming kind.
      const what = objectType === 'OBJECT_MATVIEW' ? 'CREATE MATERIALIZED VIEW' : 'SELECT INTO';
      throw new SqlError(SqlState.featureNotSupported, `${what} is not supported yet: ${streamingLater}`);
    }
    case 'CreateSeqStmt':
      return createSequence(body as CreateSeqStmt, context);
    case 'AlterSeqStmt':
      return alterSequence(body as AlterSeqStmt, context);
    case 'OxbowCreateSource':
      return createSource(body as OxbowCreateSource, context);
    case 'OxbowCreateSink':
      return createSink(body as OxbowCreateSink, context);
    case 'OxbowCreateSubscription':
      return createSubscription(body as OxbowCreateSubscription, context);
    case 'OxbowDropSubscription':
      return dropSubscription(body as OxbowDropSubscription, context);
    default:
      throw new SqlError(SqlState.featureNotSupported, `${kind} is not supported`);
  }
}
