// The WITH options of PostgreSQL sinks: both spellings (postgres, RisingWave's jdbc URL), the
// defaults, and a clear 22023 for each missing or bad option.
import { describe, expect, it } from 'vitest';
import { postgresSinkOptions, shownOptions } from '../postgres/postgres-options.js';
import { compatible } from '../postgres/postgres-target.js';
import { type } from '../../../sql/types.js';

const failure = (options: Record<string, string>) => {
  try {
    postgresSinkOptions(options);
    return 'accepted';
  } catch (error) {
    const sqlError = error as { code: string; message: string };
    return `${sqlError.code} ${sqlError.message}`;
  }
};

describe('postgres sink options', () => {
  it('reads connector = postgres with its defaults', () => {
    expect(postgresSinkOptions({ connector: 'postgres', hostname: 'db', user: 'u', database: 'd', table: 't' })).toEqual({
      host: 'db',
      port: 5432,
      user: 'u',
      password: '',
      database: 'd',
      schema: 'public',
      table: 't',
      type: 'upsert',
      createTable: false,
      connectTimeoutMs: 5000,
      queryTimeoutMs: 60000,
    });
    expect(postgresSinkOptions({ connector: 'postgres', host: 'db', port: '6543', user: 'u', password: 'p', database: 'd', schema: 's', table: 't', type: 'APPEND-ONLY', create_table_if_not_exists: 'true' })).toMatchObject({ host: 'db', port: 6543, password: 'p', schema: 's', type: 'append-only', createTable: true });
  });

  it("reads RisingWave's jdbc URL", () => {
    expect(postgresSinkOptions({ connector: 'jdbc', 'jdbc.url': 'jdbc:postgresql://pg.local:5433/shop?user=ann&password=s%40cret', 'table.name': 'orders', 'schema.name': 'sales' })).toMatchObject({
      host: 'pg.local',
      port: 5433,
      database: 'shop',
      user: 'ann',
      password: 's@cret',
      table: 'orders',
      schema: 'sales',
    });
    expect(postgresSinkOptions({ connector: 'jdbc', 'jdbc.url': 'jdbc:postgresql://[::1]/db', user: 'u', table: 't' })).toMatchObject({ host: '::1', port: 5432, database: 'db', user: 'u' });
  });

  it('refuses missing and bad options with 22023', () => {
    expect(failure({ connector: 'postgres', user: 'u', database: 'd', table: 't' })).toBe('22023 a postgres sink needs the option "hostname"');
    expect(failure({ connector: 'postgres', hostname: 'h', database: 'd', table: 't' })).toBe('22023 a postgres sink needs the option "user"');
    expect(failure({ connector: 'postgres', hostname: 'h', user: 'u', database: 'd' })).toBe('22023 a postgres sink needs the option "table"');
    expect(failure({ connector: 'postgres', hostname: 'h', user: 'u', database: 'd', table: 't', port: 'x' })).toBe('22023 invalid value for "port": "x"');
    expect(failure({ connector: 'postgres', hostname: 'h', user: 'u', database: 'd', table: 't', port: '70000' })).toBe('22023 invalid value for "port": "70000"');
    expect(failure({ connector: 'postgres', hostname: 'h', user: 'u', database: 'd', table: 't', create_table_if_not_exists: 'yes' })).toBe('22023 invalid value for "create_table_if_not_exists": "yes"');
    expect(failure({ connector: 'postgres', hostname: 'h', user: 'u', database: 'd', table: 't', query_timeout_ms: '0' })).toBe('22023 invalid value for "query_timeout_ms": "0"');
    expect(failure({ connector: 'jdbc', 'jdbc.url': 'jdbc:mysql://h/d', table: 't' })).toBe('22023 invalid value for "jdbc.url": "jdbc:mysql://h/d"');
    expect(failure({ connector: 'jdbc', table: 't' })).toBe('22023 a jdbc sink needs the option "jdbc.url"');
  });

  it('accepts a target column type only when it takes every value exactly', () => {
    expect(compatible(type('int4'), 'int4')).toBe(true);
    expect(compatible(type('int4'), 'int8')).toBe(true);
    expect(compatible(type('int8'), 'int4')).toBe(false);
    expect(compatible(type('varchar'), 'text')).toBe(true);
    expect(compatible(type('text'), 'int4')).toBe(false);
    expect(compatible(type('timestamp'), 'timestamptz')).toBe(false);
    expect(compatible(type('jsonb'), 'json')).toBe(true);
  });

  it('masks passwords where catalogs show the options', () => {
    expect(shownOptions({ connector: 'postgres', password: 'secret', user: 'u' })).toEqual({ connector: 'postgres', password: '********', user: 'u' });
    expect(shownOptions({ 'jdbc.url': 'jdbc:postgresql://h:1/d?user=u&password=secret&ssl=true' })).toEqual({ 'jdbc.url': 'jdbc:postgresql://h:1/d?user=u&password=********&ssl=true' });
  });
});
