// Text helpers shared by the prompt builders (DeerFlow escapes untrusted text the same way in prompt.py).

/** Escapes `&`, `<`, `>` (not quotes), as DeerFlow does for SOUL.md, skill fields and other untrusted text. */
export function escapePromptText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * Neutralizes angle brackets (not `&`) in user-derived strings, such as upload names, so they cannot open or close
 * prompt tags; unlike {@link escapePromptText} an `&` stays as typed.
 */
export function neutralizeTags(text: string): string {
  return text.replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
