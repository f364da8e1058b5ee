// Text helpers shared by the prompt builders (DeerFlow escapes untrusted text the same way in prompt.py).

/** Escapes `&`, `<`, `>` (not quotes), as DeerFlow does for SOUL.md, skill fields and other untrusted text. */
export function escapePromptText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
