// A rewrite of a slice of the original SQL text into something PostgreSQL's grammar accepts, with
// the map back: every offset in the rewritten text maps to a character offset in the ORIGINAL text,
// so locations reported by libpg-query (and its syntax-error positions) point at what the user
// typed. Edits are replacements of original ranges (blanking a clause with spaces keeps the layout
// one to one; inserting or replacing with other text maps the new characters to the edit's start).

interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

interface Segment {
  /** Start in the rewritten text. */
  readonly outputStart: number;
  readonly outputEnd: number;
  /** Start in the original text. */
  readonly originalStart: number;
  readonly originalEnd: number;
  /** Verbatim copy (or a same-length blanking): offsets map one to one. */
  readonly linear: boolean;
}

export interface RewrittenText {
  readonly text: string;
  /** Maps a 0-based character offset of `text` to a 0-based character offset of the original. */
  toOriginal(offset: number): number;
}

export class TextRewrite {
  private readonly edits: Edit[] = [];

  /** Rewrites original[from, to). */
  constructor(
    readonly source: string,
    readonly from: number,
    readonly to: number,
  ) {}

  replace(start: number, end: number, text: string): this {
    this.edits.push({ start, end, text });
    return this;
  }

  insert(at: number, text: string): this {
    return this.replace(at, at, text);
  }

  /** Replaces original[start, end) by spaces (newlines kept), so the layout does not move. */
  blank(start: number, end: number): this {
    return this.replace(start, end, this.source.slice(start, end).replace(/[^\n]/g, ' '));
  }

  build(): RewrittenText {
    const edits = [...this.edits].sort((a, b) => a.start - b.start || a.end - b.end);
    const segments: Segment[] = [];
    const parts: string[] = [];
    let cursor = this.from;
    let output = 0;
    const copy = (until: number): void => {
      if (until <= cursor) return;
      parts.push(this.source.slice(cursor, until));
      segments.push({ outputStart: output, outputEnd: output + until - cursor, originalStart: cursor, originalEnd: until, linear: true });
      output += until - cursor;
      cursor = until;
    };
    for (const edit of edits) {
      // Overlapping edits are a programmer error of the extension layer; the later one loses.
      if (edit.start < cursor) continue;
      copy(edit.start);
      parts.push(edit.text);
      segments.push({
        outputStart: output,
        outputEnd: output + edit.text.length,
        originalStart: edit.start,
        originalEnd: edit.end,
        linear: edit.text.length === edit.end - edit.start,
      });
      output += edit.text.length;
      cursor = edit.end;
    }
    copy(this.to);
    const to = this.to;
    return {
      text: parts.join(''),
      toOriginal(offset: number): number {
        let low = 0;
        let high = segments.length - 1;
        while (low <= high) {
          const middle = (low + high) >> 1;
          const segment = segments[middle]!;
          if (offset < segment.outputStart) high = middle - 1;
          else if (offset >= segment.outputEnd) low = middle + 1;
          else return segment.linear ? segment.originalStart + (offset - segment.outputStart) : segment.originalStart;
        }
        return to;
      },
    };
  }
}

/**
 * Converts UTF-8 byte offsets of `text` (what libpg-query reports for node locations) to character
 * offsets. Returns null when the text is pure ASCII (bytes and characters coincide).
 */
export function byteToCharacterMap(text: string): Int32Array | null {
  let ascii = true;
  for (let index = 0; index < text.length; index++) {
    if (text.charCodeAt(index) > 127) {
      ascii = false;
      break;
    }
  }
  if (ascii) return null;
  const bytes = Buffer.byteLength(text, 'utf8');
  const map = new Int32Array(bytes + 1);
  let byte = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.codePointAt(index)!;
    const width = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    for (let k = 0; k < width; k++) map[byte + k] = index;
    byte += width;
    if (code >= 0x10000) index++; // a surrogate pair is one code point
  }
  map[bytes] = text.length;
  return map;
}
