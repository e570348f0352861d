// SET, SHOW, SHOW ALL, RESET, RESET ALL, SET LOCAL, SET TIME ZONE, SET NAMES, SET SCHEMA and
// DISCARD ALL over a session's SessionSettings. As in PostgreSQL: RESET and SET ... TO DEFAULT go
// back to the session's start value (its startup parameters), not the built-in default; SET LOCAL
// lasts until the transaction block ends (COMMIT or ROLLBACK), and outside a block it warns and
// does nothing; a ROLLBACK undoes the block's SETs (settings.ts keeps the changes;
// transaction-blocks.ts begins and ends the transactions).

import type { Node, VariableSetStmt, VariableShowStmt } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import { type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { ColumnDescription, Notice } from './engine.js';
import { findSetting, type SessionSettings } from './settings.js';

export interface SettingOutcome {
  readonly commandTag: string;
  readonly notices: readonly Notice[];
  readonly columns?: readonly ColumnDescription[];
  readonly rows?: Row[];
}

function textColumn(name: string): ColumnDescription {
  return { name, type: type('text'), tableOid: 0, columnNumber: 0 };
}

/** SHOW's special names, as the grammar spells them. */
const showAliases: Readonly<Record<string, string>> = {
  'transaction isolation level': 'transaction_isolation',
  'session authorization': 'session_authorization',
  timezone: 'TimeZone',
};

function showName(name: string): string {
  return showAliases[name.toLowerCase()] ?? name;
}

/** The result columns of a SHOW statement (null for the other setting statements). */
export function showColumns(node: Node): readonly ColumnDescription[] | null {
  const show = (node as { VariableShowStmt?: VariableShowStmt }).VariableShowStmt;
  if (show === undefined) return null;
  const name = show.name ?? '';
  if (name.toLowerCase() === 'all') return [textColumn('name'), textColumn('setting'), textColumn('description')];
  const definition = findSetting(showName(name));
  return [textColumn(definition?.name ?? showName(name).toLowerCase())];
}

const needsNoQuotes = /^[a-z_][a-z0-9_$]*$/;

function quoteIdentifier(name: string): string {
  return needsNoQuotes.test(name) && name !== 'user' ? name : `"${name.replace(/"/g, '""')}"`;
}

/** The text of SET's arguments, as PostgreSQL flattens them. */
function argumentText(name: string, args: readonly Node[]): string {
  const listQuoted = name.toLowerCase() === 'search_path';
  const parts = args.map((arg) => {
    const constant = (arg as { A_Const?: Record<string, Record<string, unknown> | boolean | number | undefined> }).A_Const;
    if (constant === undefined) {
      throw new SqlError(SqlState.featureNotSupported, `SET ${name} takes only constant values`);
    }
    const stringValue = (constant.sval as { sval?: string } | undefined)?.sval;
    if (stringValue !== undefined) return listQuoted ? quoteIdentifier(stringValue) : stringValue;
    const integer = constant.ival as { ival?: number } | undefined;
    if (integer !== undefined) return String(integer.ival ?? 0);
    const float = (constant.fval as { fval?: string } | undefined)?.fval;
    if (float !== undefined) return float;
    const boolean = (constant.boolval as { boolval?: boolean } | undefined)?.boolval;
    if (constant.boolval !== undefined) return boolean === true ? 'on' : 'off';
    if (constant.isnull === true) throw new SqlError(SqlState.invalidParameterValue, `SET ${name} cannot be NULL`);
    return '';
  });
  if (parts.length > 1 && !['search_path', 'datestyle', 'timezone'].includes(name.toLowerCase()) && !name.includes('.')) {
    throw new SqlError(SqlState.invalidParameterValue, `SET ${name} takes only one argument`);
  }
  return parts.join(', ');
}

/**
 * SET / SHOW / DISCARD in its transaction context (`context`: the session's blockContext). In a
 * pipeline's implicit transaction (`pipelineBlock`; not a transaction block to PostgreSQL) SET
 * LOCAL warns as outside a block yet lasts until the Sync, and DISCARD ALL after another statement
 * is 25001.
 */
export function settingInContext(node: Node, settings: SessionSettings, context: 'block' | 'pipeline' | 'none', pipelineBlock: boolean): SettingOutcome {
  const discardAll = (node as { DiscardStmt?: { target?: string } }).DiscardStmt?.target === 'DISCARD_ALL';
  if (context === 'pipeline' && discardAll) throw new SqlError(SqlState.activeSqlTransaction, 'DISCARD ALL cannot be executed within a pipeline');
  if (pipelineBlock && (node as { VariableSetStmt?: { is_local?: boolean } }).VariableSetStmt?.is_local === true) {
    const outcome = settingStatement(node, settings, true);
    return { ...outcome, notices: [{ severity: 'WARNING', code: SqlState.noActiveSqlTransaction, message: 'SET LOCAL can only be used in transaction blocks' }, ...outcome.notices] };
  }
  return settingStatement(node, settings, context === 'block');
}

export function settingStatement(node: Node, settings: SessionSettings, inTransactionBlock: boolean): SettingOutcome {
  const show = (node as { VariableShowStmt?: VariableShowStmt }).VariableShowStmt;
  if (show !== undefined) {
    const name = show.name ?? '';
    if (name.toLowerCase() === 'all') {
      const rows: Row[] = settings.all().map(({ definition, value }) => [definition.name, settings.displayValue(definition, value), definition.description]);
      return { commandTag: 'SHOW', notices: [], columns: showColumns(node)!, rows };
    }
    const shown = settings.show(showName(name));
    return { commandTag: 'SHOW', notices: [], columns: [textColumn(shown.name)], rows: [[shown.value]] };
  }
  if ((node as { DiscardStmt?: unknown }).DiscardStmt !== undefined) {
    const target = (node as { DiscardStmt: { target?: string } }).DiscardStmt.target;
    if (target === 'DISCARD_ALL') {
      if (inTransactionBlock) throw new SqlError(SqlState.activeSqlTransaction, 'DISCARD ALL cannot run inside a transaction block');
      settings.resetAll();
      return { commandTag: 'DISCARD ALL', notices: [] };
    }
    const word = String(target).replace('DISCARD_', '');
    return { commandTag: `DISCARD ${word}`, notices: [] };
  }
  const set = (node as { VariableSetStmt: VariableSetStmt }).VariableSetStmt;
  let name = set.name ?? '';
  if (name === 'timezone') name = 'TimeZone';
  if (set.is_local === true && !inTransactionBlock) {
    return {
      commandTag: 'SET',
      notices: [{ severity: 'WARNING', code: SqlState.noActiveSqlTransaction, message: 'SET LOCAL can only be used in transaction blocks' }],
    };
  }
  const local = set.is_local === true;
  switch (set.kind) {
    case 'VAR_SET_VALUE':
      settings.set(name, argumentText(name, set.args ?? []), local);
      return { commandTag: 'SET', notices: [] };
    case 'VAR_SET_DEFAULT':
    case 'VAR_RESET':
      settings.set(name, undefined, local);
      return { commandTag: set.kind === 'VAR_RESET' ? 'RESET' : 'SET', notices: [] };
    case 'VAR_RESET_ALL':
      settings.resetAll();
      return { commandTag: 'RESET', notices: [] };
    case 'VAR_SET_MULTI':
      // SET TRANSACTION / SET SESSION CHARACTERISTICS: accepted; every statement is its own transaction.
      return { commandTag: 'SET', notices: [] };
    default:
      throw new SqlError(SqlState.featureNotSupported, `SET ${name} FROM CURRENT is not supported`);
  }
}
