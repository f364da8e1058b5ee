// Regular expressions from callers (a model's grep or tool_search query) run on the shared event loop, so they
// are compiled with RE2, whose matching time is linear in the input: no pattern can backtrack for seconds.
import RE2 from "re2";

/** A compiled caller-supplied pattern: only `test` is offered, as that is all the searches need. */
export interface LinearRegex {
  test(text: string): boolean;
}

/**
 * Compiles `source` (JavaScript regex syntax) with RE2; `ignoreCase` adds the `i` flag.
 * RE2 refuses what cannot run in linear time: backreferences (`\1`) and lookaround (`(?=`, `(?<!`).
 * @throws SyntaxError for a pattern RE2 rejects (invalid, unsupported, or over RE2's program-size limit).
 */
export function compileLinearRegex(source: string, ignoreCase: boolean): LinearRegex {
  try {
    return new RE2(source, ignoreCase ? "i" : "");
  } catch (err) {
    throw err instanceof SyntaxError ? err : new SyntaxError((err as Error).message);
  }
}

/** `text` with every regex metacharacter escaped, so it matches itself literally. */
export function escapeRegexSource(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
