// Sources are a kind of their own (not tables): CREATE SOURCE is listed by SHOW SOURCES, by psql's
// \d (as a foreign table, a kind psql prints), in pg_class (relkind 'f') and information_schema
// (FOREIGN); DML into a source is refused with 42809; DROP TABLE on a source and DROP SOURCE on a
// table are 42809 with PostgreSQL's wrong-object-type hint; a plain SELECT reads what the source
// has committed (RisingWave allows batch queries on sources). The kind survives a restart. A
// CREATE TABLE ... WITH (connector = 'kafka') stays a table. Real broker, real server process,
// over the wire with `pg` and `psql`; expected values are the messages produced here.

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';
import { useKafkaHarness } from './harness.js';

const kafka = useKafkaHarness();

async function column(sql: string): Promise<string[]> {
  const result = await kafka.client.query({ text: sql, rowMode: 'array' });
  return (result.rows as unknown[][]).map((row) => row.map((value) => (value === null ? 'NULL' : String(value))).join(' | '));
}

function psql(command: string): string {
  const result = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(kafka.oxbow.port), '-U', 'oxbow', '-d', 'oxbow', '-c', command], {
    encoding: 'utf8',
    env: { ...process.env, PAGER: '', PSQL_PAGER: '' },
  });
  return `${result.stdout}${result.stderr}`;
}

describe('a source is its own kind', () => {
  const messages = [1, 2, 3, 4, 5].map((v) => ({ v, name: `n${v}` }));

  it('is listed as a source, a table with a connector as a table', async () => {
    await kafka.broker.createTopic('kinds', 2);
    await kafka.broker.send('kinds', messages.map((m) => ({ value: JSON.stringify(m) })));
    const options = `connector = 'kafka', topic = 'kinds', properties.bootstrap.server = '${kafka.broker.bootstrap}'`;
    expect((await kafka.client.query(`CREATE SOURCE src (v int, name varchar) WITH (${options}) FORMAT PLAIN ENCODE JSON`)).command).toBe('CREATE');
    await kafka.client.query(`CREATE TABLE tab (v int PRIMARY KEY, name varchar) WITH (${options}) FORMAT PLAIN ENCODE JSON`);
    await kafka.client.query('CREATE TABLE plain_table (x int)');
    await kafka.committed('src', messages.length);
    await kafka.committed('tab', messages.length);
    expect(await column('SHOW SOURCES')).toEqual(['src']);
    expect(await column('SHOW TABLES')).toEqual(['plain_table', 'tab']);
    expect(await column("SELECT relname || ' ' || relkind FROM pg_class WHERE relname IN ('src', 'tab', 'plain_table') ORDER BY relname")).toEqual(['plain_table r', 'src f', 'tab r']);
    expect(await column("SELECT table_name || ' ' || table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name")).toEqual([
      'plain_table BASE TABLE',
      'src FOREIGN',
      'tab BASE TABLE',
    ]);
    const listing = psql('\\d');
    expect(listing).toMatch(/public \| src\s+\| foreign table \| oxbow/);
    expect(listing).toMatch(/public \| tab\s+\| table\s+\| oxbow/);
    expect(psql('\\dt')).not.toContain('src');
    // \d NAME describes it as psql describes a foreign table: columns, server, options.
    const described = psql('\\d src');
    expect(described).toContain('Foreign table "public.src"');
    expect(described).toMatch(/ v\s+\| integer\s+\|/);
    expect(described).toContain('Server: kafka');
    expect(described).toContain(`FDW options: (connector 'kafka', topic 'kinds', "properties.bootstrap.server" '${kafka.broker.bootstrap}', format 'plain', encode 'json')`);
    // pg_options_to_table splits at the first '=' (PostgreSQL's rule; no '=' gives a NULL value).
    expect(await column("SELECT option_name, option_value FROM pg_options_to_table(ARRAY['a=1', 'b=x=y', 'c'])")).toEqual(['a | 1', 'b | x=y', 'c | NULL']);
  });

  it('is readable by SELECT and by a materialized view', async () => {
    const expected = messages.map((m) => `${m.v} | ${m.name}`).sort();
    expect((await column('SELECT v, name FROM src')).sort()).toEqual(expected);
    await kafka.client.query('CREATE MATERIALIZED VIEW src_total AS SELECT count(*) AS n, sum(v) AS total FROM src');
    const sum = messages.reduce((total, m) => total + m.v, 0);
    expect(await column('SELECT n, total FROM src_total')).toEqual([`${messages.length} | ${sum}`]);
  });

  it('refuses DML with 42809', async () => {
    expect(await kafka.sqlError("INSERT INTO src VALUES (9, 'x')")).toMatchObject({ code: '42809', message: 'cannot insert into source "src"' });
    expect(await kafka.sqlError('UPDATE src SET v = 0')).toMatchObject({ code: '42809', message: 'cannot update source "src"' });
    expect(await kafka.sqlError('DELETE FROM src')).toMatchObject({ code: '42809', message: 'cannot delete from source "src"' });
    expect(await kafka.sqlError('COPY src FROM STDIN')).toMatchObject({ code: '42809', message: 'cannot copy to source "src"' });
    // The rows are untouched.
    expect(await column('SELECT count(*) FROM src')).toEqual([String(messages.length)]);
  });

  it('DROP of the wrong kind is 42809 with a hint', async () => {
    expect(await kafka.sqlError('DROP TABLE src', undefined, true)).toEqual({ code: '42809', message: '"src" is not a table', hint: 'Use DROP SOURCE to remove a source.' });
    expect(await kafka.sqlError('DROP SOURCE tab', undefined, true)).toEqual({ code: '42809', message: '"tab" is not a source', hint: 'Use DROP TABLE to remove a table.' });
    expect(await kafka.sqlError('DROP SOURCE plain_table')).toMatchObject({ code: '42809' });
    expect(await kafka.sqlError('DROP SOURCE nosuch')).toMatchObject({ code: '42P01', message: 'source "nosuch" does not exist' });
    expect((await kafka.client.query('DROP SOURCE IF EXISTS nosuch')).command).toBe('DROP');
  });

  it('stays a source after a restart and keeps reading', async () => {
    await kafka.restart();
    expect(await column('SHOW SOURCES')).toEqual(['src']);
    expect(await column("SELECT relkind FROM pg_class WHERE relname = 'src'")).toEqual(['f']);
    await kafka.broker.send('kinds', [{ value: JSON.stringify({ v: 6, name: 'n6' }) }]);
    await kafka.committed('src', messages.length + 1);
    expect(await column('SELECT count(*), sum(v) FROM src')).toEqual([`${messages.length + 1} | 21`]);
    await waitFor('the view to see the new message', async () => ((await column('SELECT n FROM src_total'))[0] === '6' ? true : undefined));
    expect(await kafka.sqlError('DROP SOURCE src')).toMatchObject({ code: '2BP01' });
    await kafka.client.query('DROP SOURCE src CASCADE');
    expect(await column('SHOW SOURCES')).toEqual([]);
    expect(await kafka.sqlError('SELECT * FROM src')).toMatchObject({ code: '42P01' });
  });
});
