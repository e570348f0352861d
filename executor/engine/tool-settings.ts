// Settings that client tools read or set, with PostgreSQL 15's names, defaults and descriptions:
// the read-only limits JDBC drivers ask for (pgjdbc reads max_index_keys before getImportedKeys
// and getExportedKeys) and the session settings pg_dump sets when it connects
// (synchronize_seqscans, quote_all_identifiers). oxbow has no use for their values: the read-only
// ones describe limits oxbow keeps (a key of at most 32 columns, a function of at most 100
// arguments) or the C locale, and the settable ones are accepted and shown.

import type { SettingDefinition } from './settings.js';
import { booleanSetting } from './settings.js';

export function toolSettingDefinitions(): readonly SettingDefinition[] {
  return [
    { name: 'max_index_keys', defaultValue: '32', description: 'Shows the maximum number of index keys.', category: 'Preset Options', vartype: 'integer', readOnly: true },
    { name: 'max_function_args', defaultValue: '100', description: 'Shows the maximum number of function arguments.', category: 'Preset Options', vartype: 'integer', readOnly: true },
    { name: 'lc_collate', defaultValue: 'C', description: 'Shows the collation order locale.', category: 'Preset Options', vartype: 'string', readOnly: true },
    { name: 'lc_ctype', defaultValue: 'C', description: 'Shows the character classification and case conversion locale.', category: 'Preset Options', vartype: 'string', readOnly: true },
    { name: 'data_checksums', defaultValue: 'off', description: 'Shows whether data checksums are turned on for this cluster.', category: 'Preset Options', vartype: 'bool', readOnly: true },
    { name: 'synchronize_seqscans', defaultValue: 'on', description: 'Enable synchronized sequential scans.', category: 'Version and Platform Compatibility / Previous PostgreSQL Versions', vartype: 'bool', normalize: booleanSetting('synchronize_seqscans') },
    { name: 'quote_all_identifiers', defaultValue: 'off', description: 'When generating SQL fragments, quote all identifiers.', category: 'Version and Platform Compatibility / Previous PostgreSQL Versions', vartype: 'bool', normalize: booleanSetting('quote_all_identifiers') },
  ];
}
