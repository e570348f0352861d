// The session state that evaluation reads (now(), the time zone, DateStyle, IntervalStyle,
// extra_float_digits). Re-exported by functions.ts, which is the contract other layers import;
// it lives in its own file so the value modules can read it without an import cycle.

/** Session state that some functions read: now(), the time zone, DateStyle, IntervalStyle. */
export interface EvalContext {
  /** Statement start time (now(), current_timestamp), microseconds since 1970 UTC. */
  readonly statementTimeMicros: number;
  /**
   * proctime(): the processing time of the batch being evaluated, microseconds since 1970 UTC. A
   * streaming projection sets it once per batch; absent (a batch query): the statement time.
   */
  readonly processingTimeMicros?: number;
  /** IANA zone name or a fixed offset such as 'UTC', '+02', 'Europe/Paris'. */
  readonly timeZone: string;
  readonly dateStyle: string;
  readonly intervalStyle: string;
  readonly extraFloatDigits: number;
  /**
   * pg_sleep's way out: the batch executor sets it to record the seconds owed, then sleeps them
   * between batches where a cancel or statement_timeout can stop it. Absent (constant contexts,
   * the streaming executor): pg_sleep blocks the thread.
   */
  readonly sleep?: (seconds: number) => void;
  /**
   * The name a reg* value prints as (regclass: the relation, regtype: format_type, regproc: the
   * function, regnamespace: the schema); undefined prints the number, as PostgreSQL does for an
   * OID that names nothing. The session supplies it (it needs the catalog); absent: numbers.
   */
  readonly objectName?: (type: 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'regprocedure', oid: number) => string | undefined;
  /** The reverse, for reg* text input that is not digits (a Bind parameter 'my_table'); throws PostgreSQL's errors. */
  readonly objectOid?: (type: 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'regprocedure', text: string) => number;
}

export const DEFAULT_EVAL_CONTEXT: EvalContext = Object.freeze({
  statementTimeMicros: 0,
  timeZone: 'UTC',
  dateStyle: 'ISO, MDY',
  intervalStyle: 'postgres',
  extraFloatDigits: 1,
});
