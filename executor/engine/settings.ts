// Session settings (GUCs): PostgreSQL's names, defaults, validation and SHOW text for the
// parameters clients and psql use, the reported ones (sent in ParameterStatus when they change),
// and RisingWave's settings, accepted as documented no-ops:
//   RW_IMPLICIT_FLUSH      DML already returns after its change is visible everywhere (DESIGN.md 1).
//   STREAMING_PARALLELISM  a dataflow's parallelism is the server's --parallelism, for every view.
//   QUERY_MODE             batch queries always run locally.
//   (and the other rw_* / batch_* / streaming_* knobs listed below).
// Names are case-insensitive; SHOW prints the canonical spelling (DateStyle, TimeZone...).
// Names with a dot (`myapp.user_id`) are custom placeholders, as in PostgreSQL.

import { SqlError, SqlState } from '../../sql/errors.js';
import { toolSettingDefinitions } from './tool-settings.js';

export interface SettingDefinition {
  /** Canonical name as SHOW and pg_settings print it. */
  readonly name: string;
  readonly defaultValue: string;
  readonly description: string;
  readonly category: string;
  readonly vartype: 'bool' | 'integer' | 'real' | 'string' | 'enum';
  readonly unit?: string;
  /** Reported to the client in ParameterStatus. */
  readonly reported?: boolean;
  /** Cannot be changed by SET (server_version, integer_datetimes...). */
  readonly readOnly?: boolean;
  /** Normalizes a user value to its stored text; throws SqlError when invalid. */
  readonly normalize?: (value: string, current: string) => string;
  readonly enumValues?: readonly string[];
}

function invalidValue(name: string, value: string, hint?: string): SqlError {
  return new SqlError(SqlState.invalidParameterValue, `invalid value for parameter "${name}": "${value}"`, hint === undefined ? {} : { hint });
}

export function booleanSetting(name: string) {
  return (value: string): string => {
    const lower = value.trim().toLowerCase();
    if (['on', 'true', 'yes', '1', 't', 'y'].includes(lower)) return 'on';
    if (['off', 'false', 'no', '0', 'f', 'n'].includes(lower)) return 'off';
    throw new SqlError(SqlState.invalidParameterValue, `parameter "${name}" requires a Boolean value`);
  };
}

function enumSetting(name: string, values: readonly string[]) {
  return (value: string): string => {
    const found = values.find((candidate) => candidate.toLowerCase() === value.trim().toLowerCase());
    if (found === undefined) throw invalidValue(name, value, `Available values: ${values.join(', ')}.`);
    return found;
  };
}

function integerSetting(name: string, minimum: number, maximum: number) {
  return (value: string): string => {
    const trimmed = value.trim();
    if (!/^[+-]?\d+$/.test(trimmed)) throw new SqlError(SqlState.invalidParameterValue, `invalid value for parameter "${name}": "${value}"`);
    const number = Number(trimmed);
    if (number < minimum || number > maximum) {
      throw new SqlError(
        SqlState.invalidParameterValue,
        `${number} is outside the valid range for parameter "${name}" (${minimum} .. ${maximum})`,
      );
    }
    return String(number);
  };
}

const timeUnitsMs: Readonly<Record<string, number>> = { us: 0.001, ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds settings (statement_timeout): a number of ms or a number with a unit. */
function millisecondsSetting(name: string) {
  return (value: string): string => {
    const match = /^\s*([+-]?\d+(?:\.\d+)?)\s*(us|ms|s|min|h|d)?\s*$/.exec(value);
    if (match === null) {
      // PostgreSQL hints at the units only when the value starts like a number.
      const hint = /^\s*[+-]?\d/.test(value) ? 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".' : undefined;
      throw new SqlError(SqlState.invalidParameterValue, `invalid value for parameter "${name}": "${value}"`, hint === undefined ? {} : { hint });
    }
    const milliseconds = Math.round(Number(match[1]) * timeUnitsMs[match[2] ?? 'ms']!);
    if (milliseconds < 0 || milliseconds > 2147483647) {
      throw new SqlError(SqlState.invalidParameterValue, `${milliseconds} ms is outside the valid range for parameter "${name}" (0 .. 2147483647)`);
    }
    return String(milliseconds);
  };
}

/** SHOW text of a milliseconds setting: PostgreSQL prints the largest exact unit (30s, 5min). */
export function formatMilliseconds(milliseconds: number): string {
  if (milliseconds === 0) return '0';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['min', 60_000], ['s', 1000]] as const) {
    if (milliseconds % size === 0) return `${milliseconds / size}${unit}`;
  }
  return `${milliseconds}ms`;
}

const memoryUnitsKb: Readonly<Record<string, number>> = { B: 1 / 1024, kB: 1, MB: 1024, GB: 1024 * 1024, TB: 1024 * 1024 * 1024 };

/** A memory setting stored in kB (work_mem), as PostgreSQL parses it: a number with an optional unit (kB without). */
function kilobytesSetting(name: string, minimumKb: number) {
  return (value: string): string => {
    const match = /^\s*([+-]?\d+(?:\.\d+)?)\s*(B|kB|MB|GB|TB)?\s*$/.exec(value);
    if (match === null) {
      const hint = /^\s*[+-]?\d/.test(value) ? 'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".' : undefined;
      throw invalidValue(name, value, hint);
    }
    const kilobytes = Math.round(Number(match[1]) * memoryUnitsKb[match[2] ?? 'kB']!);
    if (kilobytes < minimumKb || kilobytes > 2147483647) {
      throw new SqlError(SqlState.invalidParameterValue, `${kilobytes} kB is outside the valid range for parameter "${name}" (${minimumKb} .. 2147483647)`);
    }
    return String(kilobytes);
  };
}

/** SHOW text of a kB setting: PostgreSQL prints the largest exact unit (4MB, 1536kB). */
export function formatKilobytes(kilobytes: number): string {
  if (kilobytes === 0) return '0';
  for (const [unit, size] of [['TB', 1024 * 1024 * 1024], ['GB', 1024 * 1024], ['MB', 1024]] as const) {
    if (kilobytes % size === 0) return `${kilobytes / size}${unit}`;
  }
  return `${kilobytes}kB`;
}

function normalizeDateStyle(value: string, current: string): string {
  // Parts not given keep their current value; German alone also means DMY (PostgreSQL's rule).
  const [currentOutput, currentOrder] = current.split(', ');
  let output: string | undefined;
  let order: string | undefined;
  let germanOrder = false;
  for (const part of value.split(/[\s,]+/).filter((item) => item !== '')) {
    const lower = part.toLowerCase();
    if (lower === 'iso') output = 'ISO';
    else if (lower === 'postgres') output = 'Postgres';
    else if (lower === 'sql') output = 'SQL';
    else if (lower === 'german') {
      output = 'German';
      germanOrder = true;
    }
    else if (lower === 'mdy' || lower === 'us' || lower === 'noneuropean') order = 'MDY';
    else if (lower === 'dmy' || lower === 'european') order = 'DMY';
    else if (lower === 'ymd') order = 'YMD';
    else if (lower === 'default') continue;
    else throw invalidValue('DateStyle', value, `Unrecognized key word: "${part}".`);
  }
  if (order === undefined && germanOrder) order = 'DMY';
  return `${output ?? currentOutput ?? 'ISO'}, ${order ?? currentOrder ?? 'MDY'}`;
}

function normalizeTimeZone(value: string): string {
  const trimmed = value.trim();
  if (/^[+-]?\d+(\.\d+)?$/.test(trimmed)) {
    // SET TIME ZONE -7: POSIX notation flips the sign (PostgreSQL shows <-07>+07).
    const hours = Number(trimmed);
    const sign = hours < 0 ? '-' : '+';
    const absolute = Math.abs(hours);
    const text = String(Math.trunc(absolute)).padStart(2, '0');
    return `<${sign}${text}>${hours < 0 ? '+' : '-'}${text}`;
  }
  const lower = trimmed.toLowerCase();
  if (lower === 'utc' || lower === 'z' || lower === 'zulu' || lower === 'gmt' || lower === 'etc/utc') return trimmed.toUpperCase() === 'ETC/UTC' ? 'Etc/UTC' : trimmed.toUpperCase();
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: trimmed }).resolvedOptions().timeZone;
    // Keep the user's spelling when it is a valid IANA name (PostgreSQL shows what was set).
    return resolved.toLowerCase() === lower ? trimmed : trimmed;
  } catch {
    throw invalidValue('TimeZone', value);
  }
}

function normalizeClientEncoding(value: string): string {
  // asyncpg's startup packet quotes it ('utf-8'), which PostgreSQL accepts.
  const lower = value.trim().replace(/^'(.*)'$/, '$1').toLowerCase().replace(/[-_]/g, '');
  if (lower === 'utf8' || lower === 'unicode') return 'UTF8';
  if (lower === 'sqlascii') return 'UTF8';
  throw new SqlError(SqlState.featureNotSupported, `client encoding "${value}" is not supported`, {
    hint: 'oxbow speaks UTF8 only.',
  });
}

function normalizeStandardConformingStrings(value: string): string {
  const normalized = booleanSetting('standard_conforming_strings')(value);
  if (normalized !== 'on') {
    throw new SqlError(SqlState.featureNotSupported, 'standard_conforming_strings cannot be turned off in oxbow');
  }
  return normalized;
}

/** Splits search_path text into schema names (quotes removed, unquoted names lower-cased). */
export function parseSearchPath(value: string): string[] {
  const names: string[] = [];
  const pattern = /\s*(?:"((?:[^"]|"")*)"|([^,\s]+))\s*(?:,|$)/gy;
  for (const match of value.matchAll(pattern)) {
    if (match[0] === '') break;
    if (match[1] !== undefined) names.push(match[1].replace(/""/g, '"'));
    else if (match[2] !== undefined) names.push(match[2].toLowerCase());
  }
  return names;
}

const definitions: readonly SettingDefinition[] = [
  { name: 'application_name', defaultValue: '', description: 'Sets the application name to be reported in statistics and logs.', category: 'Reporting and Logging / What to Log', vartype: 'string', reported: true },
  { name: 'client_encoding', defaultValue: 'UTF8', description: "Sets the client's character set encoding.", category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string', reported: true, normalize: normalizeClientEncoding },
  { name: 'DateStyle', defaultValue: 'ISO, MDY', description: 'Sets the display format for date and time values.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string', reported: true, normalize: normalizeDateStyle },
  { name: 'IntervalStyle', defaultValue: 'postgres', description: 'Sets the display format for interval values.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'enum', reported: true, enumValues: ['postgres', 'postgres_verbose', 'sql_standard', 'iso_8601'], normalize: enumSetting('IntervalStyle', ['postgres', 'postgres_verbose', 'sql_standard', 'iso_8601']) },
  { name: 'TimeZone', defaultValue: 'UTC', description: 'Sets the time zone for displaying and interpreting time stamps.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string', reported: true, normalize: normalizeTimeZone },
  { name: 'extra_float_digits', defaultValue: '1', description: 'Sets the number of digits displayed for floating-point values.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'integer', normalize: integerSetting('extra_float_digits', -15, 3) },
  { name: 'search_path', defaultValue: '"$user", public', description: 'Sets the schema search order for names that are not schema-qualified.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'string' },
  { name: 'statement_timeout', defaultValue: '0', unit: 'ms', description: 'Sets the maximum allowed duration of any statement.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'integer', normalize: millisecondsSetting('statement_timeout') },
  { name: 'lock_timeout', defaultValue: '0', unit: 'ms', description: 'Sets the maximum allowed duration of any wait for a lock.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'integer', normalize: millisecondsSetting('lock_timeout') },
  { name: 'idle_in_transaction_session_timeout', defaultValue: '0', unit: 'ms', description: 'Sets the maximum allowed idle time between queries, when in a transaction.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'integer', normalize: millisecondsSetting('idle_in_transaction_session_timeout') },
  { name: 'idle_session_timeout', defaultValue: '0', unit: 'ms', description: 'Sets the maximum allowed idle time between queries, when not in a transaction.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'integer', normalize: millisecondsSetting('idle_session_timeout') },
  { name: 'standard_conforming_strings', defaultValue: 'on', description: "Causes '...' strings to treat backslashes literally.", category: 'Version and Platform Compatibility / Previous PostgreSQL Versions', vartype: 'bool', reported: true, normalize: normalizeStandardConformingStrings },
  { name: 'integer_datetimes', defaultValue: 'on', description: 'Shows whether datetimes are integer based.', category: 'Preset Options', vartype: 'bool', reported: true, readOnly: true },
  { name: 'server_version', defaultValue: '15.0', description: 'Shows the server version.', category: 'Preset Options', vartype: 'string', reported: true, readOnly: true },
  { name: 'server_version_num', defaultValue: '150000', description: 'Shows the server version as an integer.', category: 'Preset Options', vartype: 'integer', readOnly: true },
  { name: 'server_encoding', defaultValue: 'UTF8', description: 'Shows the server (database) character set encoding.', category: 'Preset Options', vartype: 'string', reported: true, readOnly: true },
  { name: 'max_identifier_length', defaultValue: '63', description: 'Shows the maximum identifier length.', category: 'Preset Options', vartype: 'integer', readOnly: true },
  { name: 'ssl', defaultValue: 'off', description: 'Enables SSL connections.', category: 'Connections and Authentication / SSL', vartype: 'bool', readOnly: true },
  { name: 'max_connections', defaultValue: '100', description: 'Sets the maximum number of concurrent connections.', category: 'Connections and Authentication / Connection Settings', vartype: 'integer', readOnly: true },
  { name: 'block_size', defaultValue: '8192', description: 'Shows the size of a disk block.', category: 'Preset Options', vartype: 'integer', readOnly: true },
  { name: 'is_superuser', defaultValue: 'on', description: 'Shows whether the current user is a superuser.', category: 'Preset Options', vartype: 'bool', reported: true, readOnly: true },
  { name: 'in_hot_standby', defaultValue: 'off', description: 'Shows whether hot standby is currently active.', category: 'Preset Options', vartype: 'bool', reported: true, readOnly: true },
  { name: 'oxbow_parallelism', defaultValue: '1', description: 'Worker threads per parallel fragment (--parallelism; by default --cores).', category: 'Preset Options', vartype: 'integer', readOnly: true },
  { name: 'oxbow_cores', defaultValue: '1', description: 'Cores oxbow may use (--cores; by default the cores of the machine): a view that stores its rows runs as a source fragment of at most cores - 1 workers.', category: 'Preset Options', vartype: 'integer', readOnly: true },
  { name: 'oxbow_standby_epoch', defaultValue: '', description: 'On a standby of a cluster: the epoch of the checkpoint this connection reads (empty on a leader or a single node).', category: 'Preset Options', vartype: 'string', readOnly: true },
  { name: 'role', defaultValue: 'none', description: 'Sets the current role.', category: 'Preset Options', vartype: 'string' },
  { name: 'session_authorization', defaultValue: 'oxbow', description: 'Sets the session user name.', category: 'Preset Options', vartype: 'string', reported: true, readOnly: true },
  { name: 'default_transaction_read_only', defaultValue: 'off', description: 'Sets the default read-only status of new transactions.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'bool', reported: true, normalize: booleanSetting('default_transaction_read_only') },
  { name: 'default_transaction_isolation', defaultValue: 'read committed', description: 'Sets the transaction isolation level of each new transaction.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'enum', normalize: enumSetting('default_transaction_isolation', ['serializable', 'repeatable read', 'read committed', 'read uncommitted']) },
  { name: 'transaction_isolation', defaultValue: 'read committed', description: "Sets the current transaction's isolation level.", category: 'Client Connection Defaults / Statement Behavior', vartype: 'enum', normalize: enumSetting('transaction_isolation', ['serializable', 'repeatable read', 'read committed', 'read uncommitted']) },
  { name: 'transaction_read_only', defaultValue: 'off', description: "Sets the current transaction's read-only status.", category: 'Client Connection Defaults / Statement Behavior', vartype: 'bool', normalize: booleanSetting('transaction_read_only') },
  { name: 'client_min_messages', defaultValue: 'notice', description: 'Sets the message levels that are sent to the client.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'enum', normalize: enumSetting('client_min_messages', ['debug5', 'debug4', 'debug3', 'debug2', 'debug1', 'log', 'notice', 'warning', 'error']) },
  { name: 'bytea_output', defaultValue: 'hex', description: 'Sets the output format for bytea.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'enum', normalize: enumSetting('bytea_output', ['hex']) },
  { name: 'lc_messages', defaultValue: 'C', description: 'Sets the language in which messages are displayed.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string' },
  { name: 'lc_monetary', defaultValue: 'C', description: 'Sets the locale for formatting monetary amounts.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string' },
  { name: 'lc_numeric', defaultValue: 'C', description: 'Sets the locale for formatting numbers.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string' },
  { name: 'lc_time', defaultValue: 'C', description: 'Sets the locale for formatting date and time values.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string' },
  { name: 'timezone_abbreviations', defaultValue: 'Default', description: 'Selects a file of time zone abbreviations.', category: 'Client Connection Defaults / Locale and Formatting', vartype: 'string' },
  { name: 'row_security', defaultValue: 'on', description: 'Enable row security.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'bool', normalize: booleanSetting('row_security') },
  { name: 'synchronous_commit', defaultValue: 'on', description: "Sets the current transaction's synchronization level.", category: 'Write-Ahead Log / Settings', vartype: 'enum', normalize: enumSetting('synchronous_commit', ['local', 'remote_write', 'remote_apply', 'on', 'off']) },
  { name: 'work_mem', defaultValue: '4096', unit: 'kB', description: 'Sets the maximum memory to be used for query workspaces.', category: 'Resource Usage / Memory', vartype: 'integer', normalize: kilobytesSetting('work_mem', 64) },
  { name: 'xmloption', defaultValue: 'content', description: 'Sets whether XML data in implicit parsing and serialization operations is to be considered as documents or content fragments.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'enum', normalize: enumSetting('xmloption', ['content', 'document']) },
  { name: 'check_function_bodies', defaultValue: 'on', description: 'Check routine bodies during CREATE FUNCTION and CREATE PROCEDURE.', category: 'Client Connection Defaults / Statement Behavior', vartype: 'bool', normalize: booleanSetting('check_function_bodies') },
  { name: 'default_with_oids', defaultValue: 'off', description: 'WITH OIDS is no longer supported; this can only be false.', category: 'Version and Platform Compatibility / Previous PostgreSQL Versions', vartype: 'bool', normalize: enumSetting('default_with_oids', ['off']) },
  { name: 'escape_string_warning', defaultValue: 'on', description: 'Warn about backslash escapes in ordinary string literals.', category: 'Version and Platform Compatibility / Previous PostgreSQL Versions', vartype: 'bool', normalize: booleanSetting('escape_string_warning') },
  { name: 'jit', defaultValue: 'off', description: 'Allow JIT compilation (oxbow: no effect).', category: 'Query Tuning / Other Planner Options', vartype: 'bool', normalize: booleanSetting('jit') },
  { name: 'max_parallel_workers_per_gather', defaultValue: '0', description: 'Sets the maximum number of parallel processes per executor node (oxbow: no effect).', category: 'Resource Usage / Asynchronous Behavior', vartype: 'integer', normalize: integerSetting('max_parallel_workers_per_gather', 0, 1024) },
  // Settings a pg_dump script sets on restore: accepted, no effect (pg_dump's own session settings: tool-settings.ts).
  { name: 'default_tablespace', defaultValue: '', description: 'Sets the default tablespace to create tables and indexes in (oxbow: only the default).', category: 'Client Connection Defaults / Statement Behavior', vartype: 'string', normalize: enumSetting('default_tablespace', ['', 'pg_default']) },
  { name: 'default_table_access_method', defaultValue: 'heap', description: 'Sets the default table access method for new tables (oxbow: heap names its only one).', category: 'Client Connection Defaults / Statement Behavior', vartype: 'string', normalize: enumSetting('default_table_access_method', ['heap']) },
  // RisingWave's settings: accepted, no effect (see the file comment).
  { name: 'rw_implicit_flush', defaultValue: 'false', description: 'RisingWave compatibility, no effect: oxbow DML is visible in every view when it returns.', category: 'RisingWave compatibility', vartype: 'bool', normalize: (value) => (booleanSetting('rw_implicit_flush')(value) === 'on' ? 'true' : 'false') },
  { name: 'streaming_parallelism', defaultValue: 'default', description: 'RisingWave compatibility, no effect: every dataflow runs at the parallelism the server started with (--parallelism).', category: 'RisingWave compatibility', vartype: 'string' },
  { name: 'query_mode', defaultValue: 'auto', description: 'RisingWave compatibility, no effect: batch queries always run locally.', category: 'RisingWave compatibility', vartype: 'enum', normalize: enumSetting('query_mode', ['auto', 'local', 'distributed']) },
  { name: 'batch_parallelism', defaultValue: '0', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'integer' },
  { name: 'rw_streaming_enable_delta_join', defaultValue: 'false', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'bool' },
  { name: 'rw_batch_enable_lookup_join', defaultValue: 'true', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'bool' },
  { name: 'rw_batch_enable_sort_agg', defaultValue: 'true', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'bool' },
  { name: 'rw_enable_two_phase_agg', defaultValue: 'true', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'bool' },
  { name: 'rw_force_two_phase_agg', defaultValue: 'false', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'bool' },
  { name: 'rw_enable_share_plan', defaultValue: 'true', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'bool' },
  { name: 'streaming_rate_limit', defaultValue: 'default', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'string' },
  { name: 'background_ddl', defaultValue: 'false', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'bool' },
  { name: 'sink_decouple', defaultValue: 'default', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'string' },
  { name: 'visibility_mode', defaultValue: 'default', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'string' },
  { name: 'rw_streaming_over_window_cache_policy', defaultValue: 'full', description: 'RisingWave compatibility, no effect.', category: 'RisingWave compatibility', vartype: 'string' },
  ...toolSettingDefinitions(),
];

const byLowerName = new Map<string, SettingDefinition>(definitions.map((definition) => [definition.name.toLowerCase(), definition]));

export function settingDefinitions(): readonly SettingDefinition[] {
  return definitions;
}

export function findSetting(name: string): SettingDefinition | undefined {
  return byLowerName.get(name.toLowerCase());
}

/**
 * How the open transaction changed one setting (PostgreSQL's GUC stack, one nesting level): the
 * session-level value before it (`prior`; undefined: not set in the session), and whether it was
 * SET, SET LOCAL, or SET then SET LOCAL (`masked` keeps the SET's value for the commit).
 */
interface TransactionChange {
  readonly prior: string | undefined;
  state: 'set' | 'local' | 'setLocal';
  masked: string | undefined;
}

/** Where a setting's current value comes from, as pg_settings.source names it. */
export type SettingSource = 'default' | 'client' | 'session';

/**
 * One session's settings, in layers as PostgreSQL keeps them: the value SET in this session, over
 * the session's start value (the startup packet's parameters and `-c name=value` options, which is
 * what RESET, SET ... TO DEFAULT, set_config(name, NULL, ...), RESET ALL and DISCARD ALL go back to:
 * PostgreSQL's reset_val), over the built-in default. Inside a transaction (an explicit block, or
 * the implicit one around each statement outside a block) every change is remembered: a rollback
 * restores the values from before it; a commit keeps SET's values and undoes SET LOCAL's.
 * Reported parameters announce every change of their value.
 */
/** The session's setting values at a SAVEPOINT. */
export interface SettingsMark {
  readonly values: ReadonlyMap<string, string>;
  readonly custom: ReadonlyMap<string, string>;
}

export class SessionSettings {
  private readonly values = new Map<string, string>();
  /** Custom placeholders (names with a dot). */
  private readonly custom = new Map<string, string>();
  private readonly startValues = new Map<string, string>();
  private readonly customStartValues = new Map<string, string>();
  private readonly defaults = new Map<string, string>();
  private transactionOpen = false;
  /** The open transaction's changes by name (canonical, or lower-case for custom ones); made on the first change. */
  private changes: Map<string, TransactionChange> | undefined;

  constructor(
    private readonly onReportedChange: (name: string, value: string) => void,
    overrides: Readonly<Record<string, string>> = {},
  ) {
    for (const [name, value] of Object.entries(overrides)) this.defaults.set(name.toLowerCase(), value);
  }

  private definitionOrThrow(name: string): SettingDefinition {
    const definition = findSetting(name);
    if (definition === undefined) {
      throw new SqlError(SqlState.undefinedObject, `unrecognized configuration parameter "${name}"`);
    }
    return definition;
  }

  /**
   * The session has started: what the startup packet set becomes the start value RESET returns
   * to (called once, after the startup parameters are applied).
   */
  sessionStarted(): void {
    for (const [name, value] of this.values) this.startValues.set(name, value);
    for (const [name, value] of this.custom) this.customStartValues.set(name, value);
    this.values.clear();
    this.custom.clear();
  }

  /** The value RESET gives back (PostgreSQL's reset_val); undefined for an unknown name. */
  resetValue(name: string): string | undefined {
    const lower = name.toLowerCase();
    if (lower.includes('.')) return this.customStartValues.get(lower);
    const definition = findSetting(lower);
    if (definition === undefined) return undefined;
    return this.startValues.get(definition.name) ?? this.defaults.get(lower) ?? definition.defaultValue;
  }

  /** Where the current value of a known setting comes from (pg_settings.source). */
  source(definition: SettingDefinition): SettingSource {
    if (this.values.has(definition.name)) return 'session';
    return this.startValues.has(definition.name) ? 'client' : 'default';
  }

  /** The current value; undefined for an unknown name. */
  get(name: string): string | undefined {
    const lower = name.toLowerCase();
    if (lower.includes('.')) return this.custom.get(lower) ?? this.customStartValues.get(lower);
    const definition = findSetting(lower);
    if (definition === undefined) return undefined;
    return this.values.get(definition.name) ?? this.resetValue(definition.name);
  }

  /** SHOW's text (statement_timeout as `5s`). Throws 42704 for an unknown name. */
  show(name: string): { name: string; value: string } {
    const lower = name.toLowerCase();
    if (lower.includes('.')) {
      const value = this.get(lower);
      if (value === undefined) throw new SqlError(SqlState.undefinedObject, `unrecognized configuration parameter "${name}"`);
      return { name: lower, value };
    }
    const definition = this.definitionOrThrow(name);
    const value = this.get(definition.name)!;
    return { name: definition.name, value: this.displayValue(definition, value) };
  }

  displayValue(definition: SettingDefinition, value: string): string {
    if (definition.unit === 'ms') return formatMilliseconds(Number(value));
    if (definition.unit === 'kB') return formatKilobytes(Number(value));
    return value;
  }

  /**
   * SET name = value (value already rendered as text; undefined means DEFAULT: back to the start
   * value). `local` (SET LOCAL, set_config(..., true)) lasts until the open transaction ends; with
   * no transaction open it changes nothing.
   */
  set(name: string, value: string | undefined, local = false): void {
    if (local && !this.transactionOpen) return;
    const lower = name.toLowerCase();
    if (lower.includes('.')) {
      this.remember(lower, this.custom.get(lower), local);
      if (value === undefined) this.custom.delete(lower);
      else this.custom.set(lower, value);
      return;
    }
    const definition = this.definitionOrThrow(name);
    if (definition.readOnly === true) {
      throw new SqlError(SqlState.cantChangeRuntimeParam, `parameter "${definition.name}" cannot be changed`);
    }
    const before = this.get(definition.name)!;
    const normalized = value === undefined || definition.normalize === undefined ? value : definition.normalize(value, before);
    this.remember(definition.name, this.values.get(definition.name), local);
    this.setSessionValue(definition, normalized, before);
  }

  /** Sets (undefined: clears) the session layer and reports a changed reported parameter. */
  private setSessionValue(definition: SettingDefinition, value: string | undefined, before: string): void {
    if (value === undefined) this.values.delete(definition.name);
    else this.values.set(definition.name, value);
    const after = this.get(definition.name)!;
    if (definition.reported === true && after !== before) this.onReportedChange(definition.name, after);
  }

  /** Records a change in the open transaction (guc.c's push_old_value, one level deep). */
  private remember(key: string, sessionValue: string | undefined, local: boolean): void {
    if (!this.transactionOpen) return;
    this.changes ??= new Map();
    const change = this.changes.get(key);
    if (change === undefined) {
      this.changes.set(key, { prior: sessionValue, state: local ? 'local' : 'set', masked: undefined });
    } else if (change.state === 'set' && local) {
      change.state = 'setLocal';
      change.masked = sessionValue;
    } else if (change.state === 'local' && !local) {
      change.state = 'set';
    }
  }

  /** A transaction begins (BEGIN, or the implicit one around a statement outside a block). */
  beginTransaction(): void {
    this.transactionOpen = true;
    this.changes = undefined;
  }

  /** It ends: a commit keeps SET's values and undoes SET LOCAL's; a rollback undoes every change. */
  endTransaction(commit: boolean): void {
    const changes = this.changes;
    this.transactionOpen = false;
    this.changes = undefined;
    if (changes === undefined) return;
    for (const [key, change] of changes) {
      if (commit && change.state === 'set') continue;
      const restored = commit && change.state === 'setLocal' ? change.masked : change.prior;
      if (key.includes('.')) {
        if (restored === undefined) this.custom.delete(key);
        else this.custom.set(key, restored);
      } else {
        const definition = findSetting(key)!;
        this.setSessionValue(definition, restored, this.get(key)!);
      }
    }
  }

  /** The session's values at a SAVEPOINT (two map copies), for rollBackToMark. */
  savepointMark(): SettingsMark {
    return { values: new Map(this.values), custom: new Map(this.custom) };
  }

  /**
   * ROLLBACK TO SAVEPOINT: every value back to the mark's. The transaction's change records stay:
   * they hold the values from before the transaction, which its own rollback or commit needs.
   */
  rollBackToMark(mark: SettingsMark): void {
    const names = new Set([...this.values.keys(), ...mark.values.keys()]);
    for (const name of names) {
      const value = mark.values.get(name);
      if (value === this.values.get(name)) continue;
      this.setSessionValue(findSetting(name)!, value, this.get(name)!);
    }
    this.custom.clear();
    for (const [name, value] of mark.custom) this.custom.set(name, value);
  }

  /** RESET ALL: every setting back to its start value (inside a transaction, undone by a rollback). */
  resetAll(): void {
    for (const name of [...this.values.keys()]) this.set(name, undefined);
    for (const name of [...this.custom.keys()]) this.set(name, undefined);
  }

  /** What SET changed in this session (name, value), custom placeholders included: a forwarded session sets them again on the leader. */
  sessionValues(): [string, string][] {
    return [...this.values, ...this.custom];
  }

  /** Every known setting with its current value, in name order (SHOW ALL, pg_settings). */
  all(): { definition: SettingDefinition; value: string }[] {
    return [...definitions]
      .sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1))
      .map((definition) => ({ definition, value: this.get(definition.name)! }));
  }

  /** The reported parameters and their current values. */
  reported(): Map<string, string> {
    const map = new Map<string, string>();
    for (const definition of definitions) if (definition.reported === true) map.set(definition.name, this.get(definition.name)!);
    return map;
  }

  searchPath(user: string): string[] {
    return parseSearchPath(this.get('search_path')!).map((name) => (name === '$user' ? user : name));
  }

  statementTimeoutMs(): number {
    return Number(this.get('statement_timeout'));
  }
}
