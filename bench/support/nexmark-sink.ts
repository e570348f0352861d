// The sink form of a Nexmark query (`bench/nexmark.ts --form sink`): the query's view
// `CREATE MATERIALIZED VIEW nexmark_qN AS <select>` becomes `CREATE SINK nexmark_qN AS <select>
// WITH (connector = 'blackhole')`, as RisingWave's Nexmark benchmark runs it: the same dataflow,
// its changes delivered to a sink that drops them instead of a view that keeps them. Statements
// before the view (setup) are kept as they are.

export function asBlackholeSink(query: string, sql: string): string {
  const view = new RegExp(`CREATE\\s+MATERIALIZED\\s+VIEW\\s+nexmark_${query}\\s+AS\\s+`, 'i').exec(sql);
  if (view === null) throw new Error(`${query}.sql does not create the view nexmark_${query}`);
  const select = sql.slice(view.index + view[0].length).replace(/;\s*$/, '');
  return `${sql.slice(0, view.index)}CREATE SINK nexmark_${query} AS ${select} WITH (connector = 'blackhole')`;
}
