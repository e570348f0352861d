// The sources' figures in the Prometheus text exposition format, for the server's /metrics
// endpoint: per source partition the committed offset, the high watermark and the lag, messages
// read and rejected; per source the current connection trouble (1 while it lasts) and its error
// rows (rejected messages and trouble, each retry of a failing connection); per sink the rows
// delivered, the failed rounds (each retried with backoff) and the current trouble.

import { sinkStatusOf } from './sink-status.js';
import { lagOf, type SourceStatus } from './source-status.js';

function label(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function sourcePrometheusText(status: SourceStatus): string {
  const partitions = status.partitionRecords();
  const lines: string[] = [];
  const family = (name: string, help: string, type: 'gauge' | 'counter', value: (index: number) => number | bigint): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    partitions.forEach((partition, index) => {
      lines.push(`${name}{source="${label(status.nameOf(partition.sourceId))}",topic="${label(partition.topic)}",partition="${partition.partition}"} ${String(value(index))}`);
    });
  };
  family('oxbow_source_committed_offset', 'Next offset of the partition as committed with the last epoch (-1: none yet).', 'gauge', (i) => partitions[i]!.committedOffset);
  family('oxbow_source_high_watermark', 'High watermark of the partition last seen (-1: unknown).', 'gauge', (i) => partitions[i]!.highWatermark);
  family('oxbow_source_lag_messages', 'Messages in the partition not yet committed by oxbow.', 'gauge', (i) => lagOf(partitions[i]!));
  family('oxbow_source_messages_total', 'Messages read from the partition since the process started.', 'counter', (i) => partitions[i]!.messages);
  family('oxbow_source_rejected_messages_total', 'Messages rejected (malformed) since the process started.', 'counter', (i) => partitions[i]!.errors);
  lines.push('# HELP oxbow_source_trouble 1 while the source cannot read (broker unreachable, topic missing).', '# TYPE oxbow_source_trouble gauge');
  for (const sourceId of status.sourceIds()) lines.push(`oxbow_source_trouble{source="${label(status.nameOf(sourceId))}"} ${status.troubleOf(sourceId) === undefined ? 0 : 1}`);
  lines.push('# HELP oxbow_source_errors_total Rows of oxbow_catalog.source_errors since the process started (rejected messages, connection trouble).', '# TYPE oxbow_source_errors_total counter');
  for (const sourceId of status.sourceIds()) lines.push(`oxbow_source_errors_total{source="${label(status.nameOf(sourceId))}"} ${status.errorCount(sourceId)}`);
  const sinks = sinkStatusOf(status).counterRecords();
  const sinkFamily = (name: string, help: string, type: 'gauge' | 'counter', value: (index: number) => number): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    sinks.forEach((sink, index) => lines.push(`${name}{sink="${label(status.nameOf(sink.sinkId))}",connector="${label(sink.connector)}"} ${value(index)}`));
  };
  sinkFamily('oxbow_sink_rows_total', 'Rows (messages) a sink delivered since the process started.', 'counter', (i) => sinks[i]!.rows);
  sinkFamily('oxbow_sink_errors_total', 'Failed delivery rounds of a sink (each retried with backoff; rows of oxbow_catalog.sink_errors).', 'counter', (i) => sinks[i]!.errors);
  sinkFamily('oxbow_sink_trouble', '1 while the sink\'s last round failed and it is retrying.', 'gauge', (i) => (sinks[i]!.trouble === null ? 0 : 1));
  return lines.join('\n') + '\n';
}
