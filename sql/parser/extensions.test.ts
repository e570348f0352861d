// oxbow's extensions to PostgreSQL's grammar, with their locations: every expected location is
// derived from the input text itself (indexOf of what the node stands for), never copied from the
// parser's output.
import { beforeAll, describe, expect, it } from 'vitest';
import type { OxbowCreateSink, OxbowCreateSource, SystemTimeClause } from './ast.js';
import { initParser, parse } from './index.js';
import { SqlError } from '../errors.js';

beforeAll(async () => {
  await initParser();
});

type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function one(sql: string): Any {
  const statements = parse(sql);
  expect(statements).toHaveLength(1);
  return statements[0]!.node as Any;
}

function fromItem(sql: string, index = 0): Any {
  return one(sql)['SelectStmt'].fromClause[index];
}

function syntaxError(sql: string): SqlError {
  try {
    parse(sql);
  } catch (error) {
    expect(error).toBeInstanceOf(SqlError);
    expect((error as SqlError).code).toBe('42601');
    return error as SqlError;
  }
  throw new Error(`expected a syntax error for: ${sql}`);
}

describe('statements', () => {
  it('splits multi-statement input with each text and location', () => {
    const sql = 'select 1;  select 2 ;\n-- note\nselect 3';
    const statements = parse(sql);
    expect(statements.map((statement) => statement.text)).toEqual(['select 1', 'select 2', 'select 3']);
    expect(statements.map((statement) => statement.location)).toEqual([0, sql.indexOf('select 2'), sql.indexOf('select 3')]);
  });

  it('returns no statement for empty input, whitespace, comments and bare semicolons', () => {
    expect(parse('')).toEqual([]);
    expect(parse('  \n\t')).toEqual([]);
    expect(parse('-- only a comment\n/* and /* nested */ another */ ;;')).toEqual([]);
  });

  it('keeps semicolons inside strings, dollar quotes, quoted identifiers and comments', () => {
    const sql = `select 'a;b', $x$c;d$x$, "e;f", E'g\\';h' /* ; */ -- ;\n; select 2`;
    const statements = parse(sql);
    expect(statements).toHaveLength(2);
    const targets = (statements[0]!.node as Any)['SelectStmt'].targetList;
    expect(targets.map((target: Any) => target.ResTarget.val.A_Const?.sval?.sval ?? target.ResTarget.val.ColumnRef.fields[0].String.sval)).toEqual([
      'a;b',
      'c;d',
      'e;f',
      "g';h",
    ]);
  });

  it('keeps a BEGIN ATOMIC function body in one statement', () => {
    const sql = 'create function f() returns int language sql begin atomic select 1; select case when true then 2 end; end; select 3';
    const statements = parse(sql);
    expect(statements).toHaveLength(2);
    expect(Object.keys(statements[0]!.node)).toEqual(['CreateFunctionStmt']);
  });

  it('reports locations as character offsets of the original input, past multi-byte characters', () => {
    const sql = "select 'é€😀', x from t where y = 'ü'";
    const select = one(sql)['SelectStmt'];
    expect(select.targetList[1].ResTarget.val.ColumnRef.location).toBe(sql.indexOf('x from'));
    expect(select.fromClause[0].RangeVar.location).toBe(sql.indexOf('t where'));
    expect(select.whereClause.A_Expr.rexpr.A_Const.location).toBe(sql.indexOf("'ü'"));
  });

  it('reports locations of later statements relative to the whole input', () => {
    const sql = 'select 1; select é, zz from t';
    const second = parse(sql)[1]!.node as Any;
    expect(second['SelectStmt'].targetList[1].ResTarget.val.ColumnRef.location).toBe(sql.indexOf('zz'));
  });
});

describe('FOR SYSTEM_TIME', () => {
  it('AS OF an expression, alias after the clause (RisingWave order)', () => {
    const sql = "select * from t FOR SYSTEM_TIME AS OF now() - interval '5 minutes' AS x where x.a > 1";
    const item = fromItem(sql).RangeVar;
    expect(item.relname).toBe('t');
    expect(item.alias.aliasname).toBe('x');
    const clause = item.oxbowSystemTime as SystemTimeClause;
    expect(clause.kind).toBe('asOf');
    expect(clause.location).toBe(sql.indexOf('FOR'));
    const at = (clause as Any)['at'].A_Expr;
    expect(at.lexpr.FuncCall.funcname[0].String.sval).toBe('now');
    expect(at.lexpr.FuncCall.location).toBe(sql.indexOf('now()'));
    expect(at.rexpr.TypeCast.arg.A_Const.sval.sval).toBe('5 minutes');
    expect(one(sql)['SelectStmt'].whereClause.A_Expr.lexpr.ColumnRef.location).toBe(sql.indexOf('x.a'));
  });

  it('AS OF with the alias before the clause', () => {
    const sql = "select * from t AS x FOR SYSTEM_TIME AS OF '2024-01-01 00:00:00+00'";
    const item = fromItem(sql).RangeVar;
    expect(item.alias.aliasname).toBe('x');
    expect(item.oxbowSystemTime.at.A_Const.sval.sval).toBe('2024-01-01 00:00:00+00');
    expect(item.oxbowSystemTime.at.A_Const.location).toBe(sql.indexOf("'2024"));
  });

  it("AS OF unix seconds, and RisingWave's `'5' SECOND` interval shorthand", () => {
    expect(fromItem('SELECT * FROM t FOR SYSTEM_TIME AS OF 963716300').RangeVar.oxbowSystemTime.at.A_Const.ival.ival).toBe(963716300);
    const sql = "SELECT * FROM t FOR SYSTEM_TIME AS OF now() - '5' second WHERE k = 1";
    const at = fromItem(sql).RangeVar.oxbowSystemTime.at.A_Expr;
    const cast = at.rexpr.TypeCast;
    expect(cast.typeName.names.map((name: Any) => name.String.sval)).toEqual(['pg_catalog', 'interval']);
    expect(cast.arg.A_Const.sval.sval).toBe('5');
    expect(cast.arg.A_Const.location).toBe(sql.indexOf("'5'"));
    expect(one(sql)['SelectStmt'].whereClause.A_Expr.lexpr.ColumnRef.fields[0].String.sval).toBe('k');
  });

  it('BETWEEN a AND b', () => {
    const sql = "select * from mv FOR SYSTEM_TIME BETWEEN now() - interval '1 hour' AND now() order by 1";
    const clause = fromItem(sql).RangeVar.oxbowSystemTime;
    expect(clause.kind).toBe('between');
    expect(clause.from.A_Expr.lexpr.FuncCall.location).toBe(sql.indexOf('now()'));
    expect(clause.to.FuncCall.location).toBe(sql.lastIndexOf('now()'));
    expect(one(sql)['SelectStmt'].sortClause).toHaveLength(1);
  });

  it('on both sides of a join, with a bare alias after PROCTIME() (temporal join)', () => {
    const sql = 'select * from a FOR SYSTEM_TIME AS OF now() join b FOR SYSTEM_TIME AS OF PROCTIME() s on a.k = s.k';
    const join = fromItem(sql).JoinExpr;
    expect(join.larg.RangeVar.relname).toBe('a');
    expect(join.larg.RangeVar.oxbowSystemTime.at.FuncCall.funcname[0].String.sval).toBe('now');
    expect(join.rarg.RangeVar.relname).toBe('b');
    expect(join.rarg.RangeVar.alias.aliasname).toBe('s');
    expect(join.rarg.RangeVar.oxbowSystemTime.at.FuncCall.funcname[0].String.sval).toBe('proctime');
    expect(join.quals.A_Expr.rexpr.ColumnRef.location).toBe(sql.indexOf('s.k'));
  });

  it('inside a subquery, a CTE and a view definition', () => {
    const sql = 'create view v as with c as (select * from t for system_time as of now()) select * from (select * from c) q';
    const query = one(sql)['ViewStmt'].query.SelectStmt;
    const cte = query.withClause.ctes[0].CommonTableExpr.ctequery.SelectStmt;
    expect(cte.fromClause[0].RangeVar.oxbowSystemTime.kind).toBe('asOf');
  });

  it('rejects a clause with no expression or an unknown form, at PostgreSQL-style positions', () => {
    const missing = syntaxError('select * from t for system_time as of where true');
    expect(missing.message).toBe('syntax error at or near "where"');
    expect(missing.position).toBe('select * from t for system_time as of '.length + 1);
    const end = syntaxError('select * from t for system_time as of');
    expect(end.message).toBe('syntax error at end of input');
    const unknown = syntaxError('select * from t for system_time since now()');
    expect(unknown.message).toBe('syntax error at or near "since"');
    expect(unknown.position).toBe('select * from t for system_time '.length + 1);
  });

  it('rejects a clause that follows no table reference directly', () => {
    const sql = 'select * from a, (select 1) s for system_time as of now()';
    const error = syntaxError(sql);
    expect(error.message).toBe('syntax error at or near "for"');
    expect(error.position).toBe(sql.indexOf('for') + 1);
    expect(syntaxError('select * from a join b on true for system_time as of now()').position).toBe('select * from a join b on true '.length + 1);
    const aliased = fromItem('select * from s.t x (a, b) for system_time as of now()').RangeVar;
    expect(aliased.alias.colnames).toHaveLength(2);
    expect(aliased.oxbowSystemTime.kind).toBe('asOf');
  });

  it('rejects a trailing word after the AS OF expression (it would otherwise read as an alias)', () => {
    const sql = "select * from t for system_time as of now() - '5' fortnight";
    const error = syntaxError(sql);
    expect(error.message).toBe('syntax error at or near "fortnight"');
    expect(error.position).toBe(sql.indexOf('fortnight') + 1);
  });

  it('reports errors inside the AS OF expression at their original position', () => {
    const sql = 'select * from t for system_time as of now( + ) where x';
    const error = syntaxError(sql);
    expect(error.message).toBe('syntax error at or near ")"');
    expect(error.position).toBe(sql.indexOf(')') + 1);
  });
});

describe('CREATE SOURCE', () => {
  it('with columns, primary key, watermark, INCLUDE, dotted WITH keys and FORMAT ... ENCODE ... (...)', () => {
    const sql = `CREATE SOURCE IF NOT EXISTS bids (auction bigint, price bigint, date_time timestamp,
      PRIMARY KEY (auction), WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
      INCLUDE partition AS part INCLUDE key INCLUDE offset AS "offset"
      WITH (connector = 'kafka', topic = 'bids', properties.bootstrap.server = 'localhost:9092',
            scan.startup.mode = 'earliest', nexmark.split.num = 2)
      FORMAT PLAIN ENCODE JSON (schema.registry = 'http://r:8081')`;
    const source = one(sql)['OxbowCreateSource'] as OxbowCreateSource;
    expect(source.relation.relname).toBe('bids');
    expect(source.relation.location).toBe(sql.indexOf('bids'));
    expect(source.ifNotExists).toBe(true);
    expect(source.columns.map((column) => column.colname)).toEqual(['auction', 'price', 'date_time']);
    expect(source.columns[1]!.location).toBe(sql.indexOf('price'));
    expect(source.primaryKey).toEqual(['auction']);
    expect(source.connector).toEqual({
      options: {
        connector: 'kafka',
        topic: 'bids',
        'properties.bootstrap.server': 'localhost:9092',
        'scan.startup.mode': 'earliest',
        'nexmark.split.num': '2',
      },
      format: 'PLAIN',
      encode: 'JSON',
      encodeOptions: { 'schema.registry': 'http://r:8081' },
      include: [{ what: 'partition', alias: 'part' }, { what: 'key' }, { what: 'offset', alias: 'offset' }],
    });
    expect(source.watermark!.column).toBe('date_time');
    const expr = source.watermark!.expr as Any;
    expect(expr.A_Expr.lexpr.ColumnRef.location).toBe(sql.indexOf('date_time - INTERVAL'));
  });

  it('without a column list', () => {
    const sql = "create source nx with (connector = 'nexmark', nexmark.table.type = 'Bid')";
    const source = one(sql)['OxbowCreateSource'] as OxbowCreateSource;
    expect(source.relation.relname).toBe('nx');
    expect(source.columns).toEqual([]);
    expect(source.connector.options).toEqual({ connector: 'nexmark', 'nexmark.table.type': 'Bid' });
  });

  it("the nexmark source: STRUCT<...> columns, a generated column and a watermark", () => {
    const sql = `CREATE SOURCE nexmark (
      event_type BIGINT,
      bid STRUCT<"auction" BIGINT, "price" BIGINT, "date_time" TIMESTAMP, nested STRUCT<a INT, b VARCHAR>>,
      date_time TIMESTAMP AS CASE WHEN event_type = 2 THEN (bid).date_time END,
      WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND
    ) WITH (connector = 'nexmark', nexmark.split.num = '2')`;
    const source = one(sql)['OxbowCreateSource'] as OxbowCreateSource;
    expect(source.columns.map((column) => column.colname)).toEqual(['event_type', 'bid', 'date_time']);
    const bidType = source.columns[1]!.typeName as Any;
    expect(bidType.names[0].String.sval).toBe('struct');
    expect(bidType.location).toBe(sql.indexOf('STRUCT'));
    const fields = bidType.oxbowStructFields as Any[];
    expect(fields.map((field) => field.colname)).toEqual(['auction', 'price', 'date_time', 'nested']);
    expect(fields[1].location).toBe(sql.indexOf('"price"'));
    expect(fields[3].typeName.oxbowStructFields.map((field: Any) => field.colname)).toEqual(['a', 'b']);
    expect(fields[3].typeName.oxbowStructFields[1].location).toBe(sql.indexOf('b VARCHAR'));
    const generated = (source.columns[2]!.constraints as Any[])[0].Constraint;
    expect(generated.contype).toBe('CONSTR_GENERATED');
    expect(generated.raw_expr.CaseExpr.location).toBe(sql.indexOf('CASE'));
    expect(source.watermark!.column).toBe('date_time');
  });

  it('rejects a source without connector options', () => {
    expect(syntaxError('create source s (a int)').message).toMatch(/connector/);
  });
});

describe('CREATE TABLE extensions', () => {
  it('WITH (connector = ...) FORMAT UPSERT ENCODE JSON on a table with a primary key', () => {
    const sql = "create table t2 (id int primary key, v varchar) with (connector = 'kafka', topic = 't2') format upsert encode json";
    const create = one(sql)['CreateStmt'];
    expect(create.relation.relname).toBe('t2');
    expect(create.tableElts).toHaveLength(2);
    expect(create.options).toBeUndefined();
    expect(create.oxbowConnector).toEqual({ options: { connector: 'kafka', topic: 't2' }, format: 'UPSERT', encode: 'JSON' });
  });

  it("CREATE TABLE ... FROM source TABLE 'schema.table' (a shared CDC source's table)", () => {
    const create = one("CREATE TABLE orders (id int PRIMARY KEY, note text) FROM pg TABLE 'public.orders'")['CreateStmt'];
    expect(create.oxbowConnector).toEqual({ options: {}, fromSource: { source: 'pg', table: 'public.orders' } });
    expect(create.tableElts).toHaveLength(2);
  });

  it('WITH (retention = ...) without a connector stays PostgreSQL options; APPEND ONLY; trailing comma', () => {
    const sql = "create table t (a int, b int,) append only with (retention = '1 day', x.y.z = 3)";
    const create = one(sql)['CreateStmt'];
    expect(create.oxbowConnector).toBeUndefined();
    expect(create.oxbowAppendOnly).toBe(true);
    expect(create.tableElts).toHaveLength(2);
    expect(create.options.map((option: Any) => [option.DefElem.defname, option.DefElem.arg.String?.sval ?? option.DefElem.arg.Integer?.ival])).toEqual([
      ['retention', '1 day'],
      ['x.y.z', 3],
    ]);
    expect(create.options[1].DefElem.location).toBe(sql.indexOf('x.y.z'));
  });

  it('a plain PostgreSQL CREATE TABLE ... AS and a materialized view WITH (retention), EMIT ON WINDOW CLOSE', () => {
    const sql = "create materialized view mv with (retention = '1 day') as select window_start, count(*) from tumble(bids, date_time, interval '10' second) group by window_start emit on window close";
    const create = one(sql)['CreateTableAsStmt'];
    expect(create.objtype).toBe('OBJECT_MATVIEW');
    expect(create.oxbowEmitOnWindowClose).toBe(true);
    expect(create.query.SelectStmt.oxbowEmitOnWindowClose).toBe(true);
    expect(create.into.options[0].DefElem.defname).toBe('retention');
    const tumble = create.query.SelectStmt.fromClause[0].RangeFunction.functions[0].List.items[0].FuncCall;
    expect(tumble.funcname[0].String.sval).toBe('tumble');
    expect(tumble.location).toBe(sql.indexOf('tumble'));
    expect(tumble.args).toHaveLength(3);
    const select = one('select * from t emit on window close')['SelectStmt'];
    expect(select.oxbowEmitOnWindowClose).toBe(true);
  });

  it("RisingWave's type name `double` means double precision (pg_catalog.float8), a column named double stays", () => {
    const float8 = ['pg_catalog', 'float8'];
    const names = (typeName: Any): string[] => typeName.names.map((name: Any) => name.String.sval);
    const create = one('create table t (v double, w double precision, s STRUCT<x double>)')['CreateStmt'];
    expect(names(create.tableElts[0].ColumnDef.typeName)).toEqual(float8);
    expect(names(create.tableElts[1].ColumnDef.typeName)).toEqual(float8);
    expect(names(create.tableElts[2].ColumnDef.typeName.oxbowStructFields[0].typeName)).toEqual(float8);
    const select = one('select double::double from t for system_time as of 1::double')['SelectStmt'];
    const cast = select.targetList[0].ResTarget.val.TypeCast;
    expect(names(cast.typeName)).toEqual(float8);
    expect(cast.arg.ColumnRef.fields[0].String.sval).toBe('double');
    expect(names(select.fromClause[0].RangeVar.oxbowSystemTime.at.TypeCast.typeName)).toEqual(float8);
  });

  it('HOP(t, col, slide, size) with an alias survives as a table function', () => {
    const sql = "select window_start from hop(bid, date_time, interval '2' second, interval '10' second) as h";
    const item = fromItem(sql).RangeFunction;
    expect(item.alias.aliasname).toBe('h');
    expect(item.functions[0].List.items[0].FuncCall.args).toHaveLength(4);
  });

  it('ALTER ... SET (retention = ...)', () => {
    const alter = one("alter materialized view mv set (retention = '2 days')")['AlterTableStmt'];
    expect(alter.objtype).toBe('OBJECT_MATVIEW');
    expect(alter.cmds[0].AlterTableCmd.def.List.items[0].DefElem.defname).toBe('retention');
  });
});

describe('CREATE SINK', () => {
  it('FROM a relation with FORMAT ... ENCODE ...', () => {
    const sql = "create sink if not exists s from public.mv with (connector = 'kafka', topic = 'out', properties.bootstrap.server = 'h:1') format upsert encode json";
    const sink = one(sql)['OxbowCreateSink'] as OxbowCreateSink;
    expect(sink.ifNotExists).toBe(true);
    expect(sink.name.relname).toBe('s');
    expect(sink.name.location).toBe(sql.indexOf(' s ') + 1);
    expect(sink.from).toMatchObject({ schemaname: 'public', relname: 'mv', location: sql.indexOf('public.mv') });
    expect(sink.query).toBeUndefined();
    expect(sink.connector).toEqual({
      options: { connector: 'kafka', topic: 'out', 'properties.bootstrap.server': 'h:1' },
      format: 'UPSERT',
      encode: 'JSON',
    });
  });

  it('AS a query (with its own WITH-CTE and FOR SYSTEM_TIME) followed by WITH options', () => {
    const sql = "CREATE SINK q AS WITH c AS (SELECT a FROM t) SELECT * FROM c JOIN u FOR SYSTEM_TIME AS OF now() ON true WITH (connector = 'blackhole', type = 'append-only')";
    const sink = one(sql)['OxbowCreateSink'] as OxbowCreateSink;
    const query = (sink.query as Any)['SelectStmt'];
    expect(query.withClause.ctes[0].CommonTableExpr.ctename).toBe('c');
    expect(query.fromClause[0].JoinExpr.rarg.RangeVar.oxbowSystemTime.kind).toBe('asOf');
    expect(query.targetList[0].ResTarget.location).toBe(sql.indexOf('*'));
    expect(sink.connector.options).toEqual({ connector: 'blackhole', type: 'append-only' });
  });

  it('rejects a reserved word where a relation name belongs', () => {
    const sql = "create sink s from with (connector = 'x')";
    const error = syntaxError(sql);
    expect(error.message).toBe('syntax error at or near "with"');
    expect(error.position).toBe(sql.indexOf('with') + 1);
  });

  it('rejects a sink without options or with a bad body', () => {
    expect(syntaxError('create sink s from mv').message).toBe('syntax error at end of input');
    const error = syntaxError("create sink s to mv with (connector = 'x')");
    expect(error.message).toBe('syntax error at or near "to"');
    expect(error.position).toBe('create sink s '.length + 1);
  });
});

describe('RisingWave statements', () => {
  it('FLUSH', () => {
    expect(parse('FLUSH; flush')).toEqual([
      { node: { OxbowFlush: {} }, text: 'FLUSH', location: 0 },
      { node: { OxbowFlush: {} }, text: 'flush', location: 7 },
    ]);
    const error = syntaxError('FLUSH now');
    expect(error.message).toBe('syntax error at or near "now"');
    expect(error.position).toBe(7);
  });

  it('SET forms and ALTER SYSTEM', () => {
    const implicit = one('SET RW_IMPLICIT_FLUSH TO true')['VariableSetStmt'];
    expect(implicit.name).toBe('rw_implicit_flush');
    expect(implicit.args[0].A_Const.sval.sval).toBe('true');
    expect(one('SET STREAMING_PARALLELISM = 1')['VariableSetStmt'].args[0].A_Const.ival.ival).toBe(1);
    expect(one('SET QUERY_MODE TO local')['VariableSetStmt'].name).toBe('query_mode');
    expect(one('ALTER SYSTEM SET time_travel_retention_ms to 10')['AlterSystemStmt'].setstmt.name).toBe('time_travel_retention_ms');
  });

  it('DROP SOURCE / DROP SINK', () => {
    const source = one('drop source if exists s1, s2 cascade')['DropStmt'];
    expect(source.oxbowObjectType).toBe('source');
    expect(source.missing_ok).toBe(true);
    expect(source.behavior).toBe('DROP_CASCADE');
    expect(source.objects).toHaveLength(2);
    const sink = one('DROP SINK nexmark_q0')['DropStmt'];
    expect(sink.oxbowObjectType).toBe('sink');
    expect(sink.objects[0].List.items[0].String.sval).toBe('nexmark_q0');
  });

  it('ALTER SOURCE / ALTER SINK', () => {
    const sql = 'ALTER SOURCE bids RENAME TO bids2';
    const rename = one(sql)['RenameStmt'];
    expect(rename.oxbowObjectType).toBe('source');
    expect(rename.relation).toMatchObject({ relname: 'bids', location: sql.indexOf('bids') });
    expect(rename.newname).toBe('bids2');
    const schema = one('alter sink s set schema other')['AlterObjectSchemaStmt'];
    expect(schema.oxbowObjectType).toBe('sink');
    expect(schema.newschema).toBe('other');
  });

  it('SHOW listings, SHOW CREATE, DESCRIBE; a setting name stays PostgreSQL SHOW', () => {
    expect(one('SHOW MATERIALIZED VIEWS FROM public')).toEqual({ OxbowShowObjects: { objectType: 'materialized views', from: ['public'] } });
    expect(one("show tables like 'bid%'")).toEqual({ OxbowShowObjects: { objectType: 'tables', like: 'bid%' } });
    expect(one('SHOW SOURCES')).toEqual({ OxbowShowObjects: { objectType: 'sources' } });
    expect(one('SHOW COLUMNS FROM s.t')).toEqual({ OxbowShowObjects: { objectType: 'columns', from: ['s', 't'] } });
    const sql = 'SHOW CREATE MATERIALIZED VIEW "Mv"';
    expect(one(sql)).toEqual({ OxbowShowCreate: { objectType: 'materialized view', name: { relname: 'Mv', inh: true, relpersistence: 'p', location: sql.indexOf('"Mv"') } } });
    expect(one('describe t')['OxbowDescribe'].relation.relname).toBe('t');
    expect(one('SHOW search_path')['VariableShowStmt'].name).toBe('search_path');
    expect(one('SHOW ALL')['VariableShowStmt'].name).toBe('all');
    const error = syntaxError('SHOW COLUMNS t');
    expect(error.message).toBe('syntax error at or near "t"');
    expect(error.position).toBe(14);
  });

  it("CREATE TABLE's table-level ON CONFLICT (RisingWave), not confused with ON COMMIT", () => {
    expect(one('CREATE TABLE t (a int PRIMARY KEY) ON CONFLICT OVERWRITE')['CreateStmt'].oxbowOnConflict).toBe('overwrite');
    expect(one('create table t (a int primary key) on conflict do update if not null')['CreateStmt'].oxbowOnConflict).toBe('do update if not null');
    expect(one('CREATE TEMP TABLE t (a int) ON COMMIT DROP')['CreateStmt'].oncommit).toBe('ONCOMMIT_DROP');
  });
});
