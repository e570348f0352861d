// The one user-facing error type. Every error that reaches a client carries a SQLSTATE from
// `SqlState`, a message, and optionally detail, hint and a 1-based character position in the
// statement text (PostgreSQL's convention). Anything that is not a SqlError becomes XX000 at the
// wire. Programmer errors are asserted with `assert()`, never reported as SqlError.

export type Severity = 'ERROR' | 'FATAL' | 'PANIC' | 'WARNING' | 'NOTICE' | 'DEBUG' | 'INFO' | 'LOG';

/** SQLSTATE codes used by oxbow; names follow PostgreSQL's errcodes.txt. */
export const SqlState = {
  successfulCompletion: '00000',
  warning: '01000',
  noData: '02000',
  featureNotSupported: '0A000',
  invalidParameterValue: '22023',
  dataException: '22000',
  stringDataRightTruncation: '22001',
  numericValueOutOfRange: '22003',
  sequenceGeneratorLimitExceeded: '2200H',
  nullValueNotAllowed: '22004',
  invalidDatetimeFormat: '22007',
  datetimeFieldOverflow: '22008',
  invalidTimeZoneDisplacementValue: '22009',
  divisionByZero: '22012',
  invalidTextRepresentation: '22P02',
  invalidBinaryRepresentation: '22P03',
  badCopyFileFormat: '22P04',
  untranslatableCharacter: '22P05',
  characterNotInRepertoire: '22021',
  invalidEscapeSequence: '22025',
  invalidRegularExpression: '2201B',
  invalidArgumentForLogarithm: '2201E',
  invalidArgumentForPowerFunction: '2201F',
  invalidArgumentForWidthBucketFunction: '2201G',
  invalidParameterValueForNtile: '22014',
  invalidTablesampleArgument: '2202H',
  intervalFieldOverflow: '22015',
  invalidEscapeCharacter: '22019',
  invalidUseOfEscapeCharacter: '2200C',
  nonstandardUseOfEscapeCharacter: '22P06',
  stringDataLengthMismatch: '22026',
  substringError: '22011',
  trimError: '22027',
  invalidCharacterValueForCast: '22018',
  invalidJsonText: '22032',
  invalidRowCountInLimitClause: '2201W',
  invalidRowCountInResultOffsetClause: '2201X',
  arraySubscriptError: '2202E',
  cardinalityViolation: '21000',
  integrityConstraintViolation: '23000',
  notNullViolation: '23502',
  foreignKeyViolation: '23503',
  uniqueViolation: '23505',
  checkViolation: '23514',
  invalidTransactionState: '25000',
  invalidCursorState: '24000',
  activeSqlTransaction: '25001',
  noActiveSqlTransaction: '25P01',
  inFailedSqlTransaction: '25P02',
  readOnlySqlTransaction: '25006',
  invalidSqlStatementName: '26000',
  invalidSavepointSpecification: '3B001',
  invalidAuthorizationSpecification: '28000',
  invalidPassword: '28P01',
  invalidGrantOperation: '0LP01',
  invalidCursorName: '34000',
  invalidCatalogName: '3D000',
  invalidSchemaName: '3F000',
  syntaxErrorOrAccessRuleViolation: '42000',
  syntaxError: '42601',
  insufficientPrivilege: '42501',
  groupingError: '42803',
  windowingError: '42P20',
  invalidRecursion: '42P19',
  invalidForeignKey: '42830',
  generatedAlways: '428C9',
  invalidName: '42602',
  nameTooLong: '42622',
  reservedName: '42939',
  datatypeMismatch: '42804',
  indeterminateDatatype: '42P18',
  wrongObjectType: '42809',
  undefinedColumn: '42703',
  undefinedFunction: '42883',
  undefinedTable: '42P01',
  undefinedParameter: '42P02',
  invalidFunctionDefinition: '42P13',
  undefinedObject: '42704',
  duplicateColumn: '42701',
  duplicateDatabase: '42P04',
  duplicateFunction: '42723',
  duplicatePreparedStatement: '42P05',
  duplicateCursor: '42P03',
  duplicateSchema: '42P06',
  duplicateTable: '42P07',
  duplicateAlias: '42712',
  duplicateObject: '42710',
  ambiguousColumn: '42702',
  ambiguousFunction: '42725',
  ambiguousParameter: '42P08',
  invalidColumnReference: '42P10',
  invalidColumnDefinition: '42611',
  invalidTableDefinition: '42P16',
  invalidObjectDefinition: '42P17',
  dependentObjectsStillExist: '2BP01',
  cannotCoerce: '42846',
  programLimitExceeded: '54000',
  statementTooComplex: '54001',
  tooManyColumns: '54011',
  tooManyArguments: '54023',
  objectNotInPrerequisiteState: '55000',
  objectInUse: '55006',
  cantChangeRuntimeParam: '55P02',
  lockNotAvailable: '55P03',
  operatorIntervention: '57000',
  queryCanceled: '57014',
  adminShutdown: '57P01',
  crashShutdown: '57P02',
  cannotConnectNow: '57P03',
  ioError: '58030',
  undefinedFile: '58P01',
  insufficientResources: '53000',
  diskFull: '53100',
  outOfMemory: '53200',
  tooManyConnections: '53300',
  configurationLimitExceeded: '53400',
  protocolViolation: '08P01',
  connectionException: '08000',
  sqlclientUnableToEstablishSqlconnection: '08001',
  connectionFailure: '08006',
  /** oxbow, as PostgreSQL's "snapshot too old": time travel outside the retained window. */
  snapshotTooOld: '72000',
  internalError: 'XX000',
  dataCorrupted: 'XX001',
  indexCorrupted: 'XX002',
} as const;

export type SqlStateCode = (typeof SqlState)[keyof typeof SqlState];

export interface SqlErrorOptions {
  detail?: string;
  hint?: string;
  /** 1-based character position in the statement text, as PostgreSQL reports it. */
  position?: number;
  severity?: Severity;
  cause?: unknown;
  /** PostgreSQL's CONTEXT field (where the error happened, e.g. `COPY t, line 2, column a: "x"`). */
  context?: string;
  /** PostgreSQL's routine ('R' field), where a client acts on it (postgres.js re-prepares on `RevalidateCachedQuery`). */
  routine?: string;
}

export class SqlError extends Error {
  override readonly name = 'SqlError';
  readonly code: SqlStateCode;
  readonly detail: string | undefined;
  readonly hint: string | undefined;
  position: number | undefined;
  readonly severity: Severity;
  /** PostgreSQL's CONTEXT field, sent as the 'W' field of ErrorResponse. */
  context: string | undefined;
  /** PostgreSQL's routine field ('R'), set only where a client acts on it. */
  readonly routine: string | undefined;

  constructor(code: SqlStateCode, message: string, options: SqlErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.detail = options.detail;
    this.hint = options.hint;
    this.position = options.position;
    this.severity = options.severity ?? 'ERROR';
    this.context = options.context;
    this.routine = options.routine;
  }

  /** The same error with a position, unless it already has one. */
  withPosition(position: number | undefined): SqlError {
    if (this.position === undefined && position !== undefined) this.position = position;
    return this;
  }
}

/** Wraps anything thrown into a SqlError; unknown errors become XX000 (internal error). */
export function toSqlError(error: unknown): SqlError {
  if (error instanceof SqlError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SqlError(SqlState.internalError, message, { cause: error });
}

/** Programmer-error check: never used for user input. */
export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new Error(`oxbow internal assertion: ${message}`);
}
