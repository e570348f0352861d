// Text ordering. oxbow uses the C collation: strings compare by their UTF-8 bytes, which is the
// same as comparing Unicode code points. JavaScript's `<` compares UTF-16 code units, which agrees
// except when a surrogate pair (U+10000..) meets a code unit in U+E000..U+FFFF; compareText handles
// that case so ORDER BY matches PostgreSQL with COLLATE "C".

/** Code-point (= UTF-8 byte) order: negative, 0, positive. */
export function compareText(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      // surrogates (0xD800..0xDFFF) stand for code points above every BMP character
      const xSurrogate = x >= 0xd800 && x <= 0xdfff;
      const ySurrogate = y >= 0xd800 && y <= 0xdfff;
      if (xSurrogate !== ySurrogate) return xSurrogate ? 1 : -1;
      return x - y;
    }
  }
  return a.length - b.length;
}

/** Length in UTF-8 bytes. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
