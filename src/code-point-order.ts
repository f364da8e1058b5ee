// Name order as Python's `sorted()` gives it (code point by code point), which the ported listings follow.

/** Rank of a UTF-16 code unit in code point order: surrogates (astral characters) after U+E000-U+FFFF. */
const rank = (unit: number): number => (unit >= 0xd800 && unit <= 0xdfff ? unit + 0x2000 : unit >= 0xe000 ? unit - 0x800 : unit);

/**
 * Compares two strings by Unicode code points, as Python compares `str` (DeerFlow sorts skills, uploads and
 * directory listings with `sorted()`). Unlike `localeCompare` it does not fold case or use the locale, and it
 * loads no ICU collation data (~2 MB of resident memory the first time a process collates).
 * @returns A negative number when `a` sorts first, positive when `b` does, 0 when they are equal.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return rank(x) - rank(y);
  }
  return a.length - b.length;
}
