// jsonb values. STUB: owned by the sql values work; the class name is the contract.

export type JsonValue = null | boolean | string | number | JsonValue[] | { [key: string]: JsonValue };

export class Jsonb {
  readonly value: JsonValue;
  constructor(value: JsonValue) {
    this.value = value;
  }
}
