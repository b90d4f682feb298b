// Text people type that others read (names, descriptions, reasons, e-mail addresses): characters
// that change how the rest displays without showing themselves are refused. Bidi controls (U+202A–
// U+202E, U+2066–U+2069) make "gnp.exe" read "exe.png"; the other invisible format characters
// (Unicode Cf: zero-width space, BOM, soft hyphen, …) hide inside look-alikes. Zero-width joiner
// and non-joiner are kept in names: emoji sequences and several scripts need them.

const HIDDEN = /[\p{Cf}]/gu;
const JOINERS = new Set(['\u200C', '\u200D']);

/** The first hidden format character in `text` as `U+XXXX`, or null when there is none. */
export function hiddenCharacterIn(text: string, joinersAllowed = true): string | null {
  for (const [c] of text.matchAll(HIDDEN)) {
    if (joinersAllowed && JOINERS.has(c)) continue;
    return `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return null;
}

/** The refusal of `what` (e.g. "The name") holding the hidden character `code`. */
export const hiddenCharacterMessage = (what: string, code: string) =>
  `${what} contains an invisible control character (${code}) that changes how text around it is shown; remove it and type it again.`;
