// RisingWave's (and MySQL-style) catalog statements that PostgreSQL lacks:
//   SHOW TABLES | MATERIALIZED VIEWS | VIEWS | SOURCES | SINKS | SUBSCRIPTIONS | SCHEMAS | DATABASES | FUNCTIONS
//        [FROM | IN schema] [LIKE 'pattern']
//   SHOW COLUMNS | INDEXES FROM | IN relation
//   SHOW CREATE TABLE | MATERIALIZED VIEW | VIEW | SOURCE | SINK | INDEX name
//   DESCRIBE relation
// They become OxbowShowObjects / OxbowShowCreate / OxbowDescribe nodes. `SHOW name` for a setting
// stays PostgreSQL's VariableShowStmt.

import type { OxbowDescribe, OxbowShowCreate, OxbowShowObjects, ShowCreateObjectType, ShowObjectType } from './ast.js';
import type { StatementSlice } from './postgres-statement.js';
import { literalText, rangeVarOf, readQualifiedName, syntaxErrorAt } from './syntax.js';
import { isWord } from './tokenizer.js';

const listings: Record<string, ShowObjectType> = {
  TABLES: 'tables',
  VIEWS: 'views',
  SOURCES: 'sources',
  SINKS: 'sinks',
  SUBSCRIPTIONS: 'subscriptions',
  SCHEMAS: 'schemas',
  DATABASES: 'databases',
  FUNCTIONS: 'functions',
  COLUMNS: 'columns',
  INDEXES: 'indexes',
};

const creatable: Record<string, ShowCreateObjectType> = {
  TABLE: 'table',
  VIEW: 'view',
  SOURCE: 'source',
  SINK: 'sink',
  INDEX: 'index',
};

type ShowNode = { OxbowShowObjects: OxbowShowObjects } | { OxbowShowCreate: OxbowShowCreate } | { OxbowDescribe: OxbowDescribe };

function expectEnd(slice: StatementSlice, index: number): void {
  if (index < slice.end) throw syntaxErrorAt(slice.source, slice.tokens, index);
}

/** Parses the statement if it is one of the forms above; otherwise undefined. */
export function parseShowOrDescribe(slice: StatementSlice): ShowNode | undefined {
  const { source, tokens, first } = slice;
  if (isWord(tokens[first], 'DESCRIBE') || isWord(tokens[first], 'DESC')) {
    const name = readQualifiedName(source, tokens, first + 1);
    expectEnd(slice, name.next);
    return { OxbowDescribe: { relation: rangeVarOf(name) } };
  }
  if (!isWord(tokens[first], 'SHOW')) return undefined;
  let index = first + 1;
  const word = tokens[index];
  if (word === undefined || word.kind !== 'identifier') return undefined;
  if (word.upper === 'CREATE') {
    index++;
    let objectType: ShowCreateObjectType | undefined;
    if (isWord(tokens[index], 'MATERIALIZED') && isWord(tokens[index + 1], 'VIEW')) {
      objectType = 'materialized view';
      index += 2;
    } else {
      objectType = creatable[tokens[index]?.upper ?? ''];
      if (objectType === undefined || tokens[index]?.kind !== 'identifier') throw syntaxErrorAt(source, tokens, index);
      index++;
    }
    const name = readQualifiedName(source, tokens, index);
    expectEnd(slice, name.next);
    return { OxbowShowCreate: { objectType, name: rangeVarOf(name) } };
  }
  let objectType: ShowObjectType | undefined;
  if (word.upper === 'MATERIALIZED' && isWord(tokens[index + 1], 'VIEWS')) {
    objectType = 'materialized views';
    index += 2;
  } else {
    objectType = listings[word.upper];
    // A single word that is no listing is a setting: PostgreSQL's SHOW handles it.
    if (objectType === undefined) return undefined;
    index++;
  }
  const show: { objectType: ShowObjectType; from?: string[]; like?: string } = { objectType };
  if (isWord(tokens[index], 'FROM') || isWord(tokens[index], 'IN')) {
    const name = readQualifiedName(source, tokens, index + 1);
    show.from = name.parts;
    index = name.next;
  } else if (objectType === 'columns' || objectType === 'indexes') {
    throw syntaxErrorAt(source, tokens, index);
  }
  if (isWord(tokens[index], 'LIKE')) {
    const pattern = tokens[index + 1];
    if (pattern?.kind !== 'string') throw syntaxErrorAt(source, tokens, index + 1);
    show.like = literalText(source, pattern);
    index += 2;
  }
  expectEnd(slice, index);
  return { OxbowShowObjects: show };
}
