// A small random SQL grammar for the differential test: tables of int4 / text / bool / numeric
// columns with NULLs, and SELECT queries (filters, joins of every kind, grouping with aggregates,
// DISTINCT, set operations, subqueries, CASE / COALESCE / IN / BETWEEN, ORDER BY + LIMIT). The
// same seed always yields the same tables and queries. Text values are lowercase ASCII so the
// order is the same under any collation.

export class Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** mulberry32 */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

export type ColumnType = 'int4' | 'text' | 'bool' | 'numeric';

export interface GeneratedTable {
  readonly name: string;
  readonly columns: readonly { readonly name: string; readonly type: ColumnType }[];
  readonly rows: readonly string[][];
}

function literal(random: Random, type: ColumnType): string {
  switch (type) {
    case 'int4':
      return String(random.int(-5, 12));
    case 'text':
      return `'${random.pick(['a', 'b', 'c', 'ab', 'ba', 'x', ''])}'`;
    case 'bool':
      return random.pick(['true', 'false']);
    case 'numeric':
      return random.pick(['0', '1.5', '-2.25', '3', '10.125', '7']);
  }
}

export function generateTables(random: Random): GeneratedTable[] {
  const tables: GeneratedTable[] = [];
  for (const name of ['t1', 't2', 't3']) {
    const columns: { name: string; type: ColumnType }[] = [{ name: 'id', type: 'int4' }];
    const extra = random.int(2, 4);
    for (let i = 0; i < extra; i++) columns.push({ name: `c${i}`, type: random.pick(['int4', 'int4', 'text', 'bool', 'numeric'] as const) });
    const count = random.int(0, 12);
    const rows: string[][] = [];
    for (let r = 0; r < count; r++) rows.push(columns.map((c, i) => (i === 0 ? String(r + 1) : random.chance(0.2) ? 'NULL' : literal(random, c.type))));
    tables.push({ name, columns, rows });
  }
  return tables;
}

export function createStatements(table: GeneratedTable): string[] {
  const columns = table.columns.map((c, i) => `${c.name} ${c.type}${i === 0 ? ' PRIMARY KEY' : ''}`);
  const statements = [`CREATE TABLE ${table.name} (${columns.join(', ')})`];
  if (table.rows.length > 0) statements.push(`INSERT INTO ${table.name} VALUES ${table.rows.map((r) => `(${r.join(', ')})`).join(', ')}`);
  return statements;
}

interface Source {
  readonly alias: string;
  readonly table: GeneratedTable;
}

class QueryBuilder {
  constructor(readonly random: Random, readonly tables: readonly GeneratedTable[]) {}

  column(sources: readonly Source[], type?: ColumnType): { sql: string; type: ColumnType } | undefined {
    const candidates = sources.flatMap((s) => s.table.columns.filter((c) => type === undefined || c.type === type).map((c) => ({ sql: `${s.alias}.${c.name}`, type: c.type })));
    return candidates.length === 0 ? undefined : this.random.pick(candidates);
  }

  value(sources: readonly Source[], type: ColumnType, depth: number): string {
    const r = this.random;
    const column = this.column(sources, type);
    if (column !== undefined && (depth > 2 || r.chance(0.5))) return column.sql;
    if (depth > 2 || r.chance(0.3)) return literal(r, type);
    switch (type) {
      case 'int4':
        return r.pick([
          () => `(${this.value(sources, 'int4', depth + 1)} ${r.pick(['+', '-', '*'])} ${this.value(sources, 'int4', depth + 1)})`,
          () => `coalesce(${this.value(sources, 'int4', depth + 1)}, ${literal(r, 'int4')})`,
          () => `case when ${this.predicate(sources, depth + 1)} then ${this.value(sources, 'int4', depth + 1)} else ${this.value(sources, 'int4', depth + 1)} end`,
          () => `abs(${this.value(sources, 'int4', depth + 1)})`,
          () => `nullif(${this.value(sources, 'int4', depth + 1)}, ${literal(r, 'int4')})`,
        ])();
      case 'text':
        return r.pick([
          () => `(${this.value(sources, 'text', depth + 1)} || ${this.value(sources, 'text', depth + 1)})`,
          () => `upper(${this.value(sources, 'text', depth + 1)})`,
          () => `coalesce(${this.value(sources, 'text', depth + 1)}, 'z')`,
        ])();
      case 'numeric':
        return r.pick([
          () => `(${this.value(sources, 'numeric', depth + 1)} ${r.pick(['+', '-', '*'])} ${this.value(sources, 'numeric', depth + 1)})`,
          () => `(${this.value(sources, 'int4', depth + 1)} + ${this.value(sources, 'numeric', depth + 1)})`,
        ])();
      case 'bool':
        return this.predicate(sources, depth + 1);
    }
  }

  predicate(sources: readonly Source[], depth: number): string {
    const r = this.random;
    const type = r.pick(['int4', 'int4', 'text', 'numeric'] as const);
    const options = [
      () => `${this.value(sources, type, depth + 1)} ${r.pick(['=', '<>', '<', '<=', '>', '>='])} ${this.value(sources, type, depth + 1)}`,
      () => `${this.value(sources, type, depth + 1)} is ${r.pick(['', 'not '])}null`,
      () => `${this.value(sources, 'int4', depth + 1)} ${r.pick(['', 'not '])}in (${[literal(r, 'int4'), literal(r, 'int4'), r.chance(0.2) ? 'NULL' : literal(r, 'int4')].join(', ')})`,
      () => `${this.value(sources, 'int4', depth + 1)} between ${literal(r, 'int4')} and ${literal(r, 'int4')}`,
    ];
    if (depth < 2) {
      options.push(
        () => `(${this.predicate(sources, depth + 1)} ${r.pick(['and', 'or'])} ${this.predicate(sources, depth + 1)})`,
        () => `not (${this.predicate(sources, depth + 1)})`,
      );
      const bool = this.column(sources, 'bool');
      if (bool !== undefined) options.push(() => bool.sql);
      options.push(() => {
        const inner = r.pick(this.tables);
        const innerColumn = inner.columns.find((c) => c.type === 'int4' && c.name !== 'id')?.name ?? 'id';
        const outer = this.column(sources, 'int4')!.sql;
        return r.pick([
          `${outer} ${r.pick(['in', 'not in'])} (select s.${innerColumn} from ${inner.name} s)`,
          `${r.pick(['', 'not '])}exists (select 1 from ${inner.name} s where s.${innerColumn} = ${outer})`,
          `${outer} > (select ${r.pick(['min', 'max', 'count'])}(s.${innerColumn}) from ${inner.name} s)`,
        ]);
      });
    }
    return r.pick(options)();
  }

  from(): { sql: string; sources: Source[] } {
    const r = this.random;
    const first = r.pick(this.tables);
    const sources: Source[] = [{ alias: 'a', table: first }];
    let sql = `${first.name} a`;
    const joins = r.int(0, 2);
    for (let j = 0; j < joins; j++) {
      const alias = j === 0 ? 'b' : 'c';
      const table = r.pick(this.tables);
      const kind = r.pick(['join', 'left join', 'right join', 'full join', 'cross join', ',']);
      const previous = r.pick(sources);
      const left = previous.table.columns.filter((c) => c.type === 'int4');
      const right = table.columns.filter((c) => c.type === 'int4');
      sources.push({ alias, table });
      if (kind === 'cross join' || kind === ',') {
        sql += `${kind === ',' ? ',' : ' cross join'} ${table.name} ${alias}`;
        continue;
      }
      // PostgreSQL runs FULL JOIN only with hashable / mergeable conditions (0A000 otherwise).
      const full = kind === 'full join';
      let condition = `${previous.alias}.${r.pick(left).name} ${full || r.chance(0.8) ? '=' : '<'} ${alias}.${r.pick(right).name}`;
      if (!full && r.chance(0.3)) condition += ` and ${this.predicate(sources, 2)}`;
      sql += ` ${kind} ${table.name} ${alias} on ${condition}`;
    }
    return { sql, sources };
  }

  /** Single-table queries whose order-sensitive parts order by the unique id. */
  windowed(): string {
    const r = this.random;
    const table = r.pick(this.tables);
    const sources: Source[] = [{ alias: 'a', table }];
    const intColumn = () => this.column(sources, 'int4')!.sql;
    const textColumn = this.column(sources, 'text')?.sql ?? `a.id::text`;
    const partition = r.chance(0.5) ? `partition by ${intColumn()} ` : '';
    const calls = [
      `row_number() over (${partition}order by a.id)`,
      `rank() over (order by ${intColumn()})`,
      `dense_rank() over (${partition}order by ${intColumn()} desc nulls last)`,
      `sum(${intColumn()}) over (${partition}order by a.id)`,
      `sum(${intColumn()}) over (order by a.id rows between ${r.int(0, 2)} preceding and ${r.int(0, 2)} following)`,
      `count(*) over (${partition.trim() === '' ? '' : partition})`,
      `lag(${intColumn()}) over (order by a.id)`,
      `lead(${intColumn()}, ${r.int(1, 2)}, -1) over (${partition}order by a.id)`,
      `first_value(${intColumn()}) over (${partition}order by a.id)`,
      `last_value(${intColumn()}) over (order by a.id rows between unbounded preceding and unbounded following)`,
      `max(${intColumn()}) over (${partition}order by a.id)`,
      `avg(${intColumn()}) over (${partition.trim() === '' ? '' : partition})`,
    ];
    const shape = r.int(0, 6);
    if (shape === 5) {
      // Written order with an avoidable cross product (a, b, then c joining both): join ordering.
      const [x, y, z] = [r.pick(this.tables), r.pick(this.tables), r.pick(this.tables)];
      const int = (t: GeneratedTable) => r.pick(t.columns.filter((c) => c.type === 'int4')).name;
      return `select a.id, b.id, c.id from ${x.name} a, ${y.name} b, ${z.name} c where a.${int(x)} = c.${int(z)} and c.${int(z)} = b.${int(y)}${r.chance(0.5) ? ` and a.id > ${r.int(0, 5)}` : ''}`;
    }
    if (shape === 6) {
      // Correlated EXISTS / NOT EXISTS / IN with extra conditions: subquery decorrelation.
      const other = r.pick(this.tables);
      const otherInt = r.pick(other.columns.filter((c) => c.type === 'int4')).name;
      const kind = r.pick(['exists', 'not exists', 'in']);
      const extra = r.chance(0.5) ? ` and s.id ${r.pick(['<', '>'])} ${r.int(1, 8)}` : '';
      if (kind === 'in') return `select a.id from ${table.name} a where ${intColumn()} in (select s.${otherInt} from ${other.name} s where s.id <> a.id${extra})`;
      return `select a.id from ${table.name} a where ${kind} (select 1 from ${other.name} s where s.${otherInt} = ${intColumn()}${extra})`;
    }
    if (shape === 0) return `select a.id, ${r.pick(calls)}, ${r.pick(calls)} from ${table.name} a`;
    if (shape === 1) return `select ${intColumn()}, string_agg(${textColumn}, ',' order by a.id), array_agg(a.id order by a.id desc) from ${table.name} a group by 1`;
    if (shape === 2) {
      const other = r.pick(this.tables);
      const otherColumn = other.columns.find((c) => c.type === 'int4' && c.name !== 'id')?.name ?? 'id';
      return `select a.id, (select ${r.pick(['count(*)', `max(s.id)`, `sum(s.${otherColumn})`])} from ${other.name} s where s.${otherColumn} ${r.pick(['=', '<'])} ${intColumn()}) from ${table.name} a`;
    }
    if (shape === 3) return `with w as (select a.id, ${intColumn()} as x from ${table.name} a where ${this.predicate(sources, 1)}) select w.x, count(*) from w group by w.x`;
    const other = r.pick(this.tables);
    return `select a.id, l.id from ${table.name} a, lateral (select s.id from ${other.name} s where s.id > a.id order by s.id limit ${r.int(1, 2)}) l`;
  }

  select(): string {
    const r = this.random;
    if (r.chance(0.25)) return this.windowed();
    const { sql: from, sources } = this.from();
    const where = r.chance(0.6) ? ` where ${this.predicate(sources, 0)}` : '';
    if (r.chance(0.35)) {
      // Group keys are never numeric: a group of 0 and 0.0 prints whichever came first.
      const key = this.column(sources, 'int4')!;
      const aggregates = [
        'count(*)',
        `count(${this.column(sources)!.sql})`,
        `sum(${this.column(sources, 'int4')!.sql})`,
        `max(${this.column(sources, 'int4')!.sql})`,
        `min(${this.value(sources, 'int4', 1)})`,
        `avg(${this.column(sources, 'int4')!.sql})`,
        `count(distinct ${this.column(sources)!.sql})`,
        `bool_or(${this.predicate(sources, 2)})`,
      ];
      const chosen = [aggregates[0]!, r.pick(aggregates), r.pick(aggregates)];
      const having = r.chance(0.3) ? ` having count(*) > ${r.int(0, 2)}` : '';
      if (r.chance(0.2)) return `select ${chosen.join(', ')} from ${from}${where}`;
      return `select ${key.sql}, ${chosen.join(', ')} from ${from}${where} group by ${key.sql}${having}`;
    }
    // LIMIT queries order by every output column; numerics are left out there because equal
    // numerics print differently (5, 5.0) and a tie would make the chosen row arbitrary.
    // DISTINCT keeps one of several equal numerics (0, 0.0): left out there too.
    const limited = r.chance(0.3);
    const distinct = r.chance(0.2) ? 'distinct ' : '';
    const itemTypes = limited || distinct !== '' ? (['int4', 'text', 'bool'] as const) : (['int4', 'text', 'numeric', 'bool'] as const);
    const items = Array.from({ length: r.int(1, 3) }, () => this.value(sources, r.pick(itemTypes), 0));
    let query = `select ${distinct}${items.join(', ')} from ${from}${where}`;
    if (r.chance(0.15)) {
      const other = r.pick(this.tables);
      const types = items.map(() => 'int4');
      void types;
      query = `select ${this.value(sources, 'int4', 2)} from ${from}${where} ${r.pick(['union', 'union all', 'intersect', 'except', 'except all'])} select s.id from ${other.name} s`;
      return query;
    }
    if (limited) {
      const order = items.map((_, i) => `${i + 1}${r.pick(['', ' desc'])}${r.pick(['', ' nulls first', ' nulls last'])}`).join(', ');
      query += ` order by ${order} limit ${r.int(0, 6)}`;
    }
    return query;
  }
}

export function generateQueries(random: Random, tables: readonly GeneratedTable[], count: number): string[] {
  const builder = new QueryBuilder(random, tables);
  return Array.from({ length: count }, () => builder.select());
}
