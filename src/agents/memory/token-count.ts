// Bounded token counting for the memory budget (no upstream counterpart: DeerMem calls tiktoken, whose Rust BPE
// does not stall a server). js-tiktoken's byte-pair merge is quadratic or worse in the length of one pre-token, and
// memory text is user-controlled (imports take 100,000-character summaries), so the count is done in pieces.

/** Counts tokens of `text`; with `limit`, may stop early and return any value above `limit` once the count passes it. */
export type CountTokens = (text: string, limit?: number) => number;

/** The part of a js-tiktoken encoder the counter uses. */
export interface PieceEncoder {
  encode(text: string, allowedSpecial?: string[] | "all", disallowedSpecial?: string[] | "all"): number[];
}

/**
 * Pre-tokens (regex pieces) longer than this many UTF-16 units are estimated, not merged: real words are far
 * shorter, while one merge of a 2,000-character piece takes seconds (a 32-unit piece: well under a millisecond).
 */
export const LONG_PIECE_UNITS = 32;
/** Consecutive short pieces are encoded together in runs of about this many UTF-16 units, then the limit is checked. */
export const SEGMENT_UNITS = 1024;

/**
 * Network-free token estimate (DeerMem `_char_based_token_estimate`): 4 characters per token, but 2 per token for
 * CJK ideographs, kana and hangul, which are denser.
 */
export function estimateTokens(text: string): number {
  // Code units, not `for...of`: this runs over whole long pieces and must stay cheap. A low surrogate ends a
  // character already counted.
  let cjk = 0;
  let chars = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff) continue;
    chars++;
    if ((c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3040 && c <= 0x30ff) || (c >= 0xac00 && c <= 0xd7a3)) cjk++;
  }
  return Math.floor((chars - cjk) / 4) + Math.floor(cjk / 2);
}

/**
 * A counter over `encoder` that does bounded work per character: the text is split with the encoding's own
 * pre-tokenizer pattern (`patStr`, e.g. cl100k_base `pat_str`); runs of short pieces, cut at piece boundaries
 * (where BPE never merges across, so the sum is exact), are encoded together; a piece longer than
 * {@link LONG_PIECE_UNITS} (a long word, digit-free run of punctuation or whitespace) counts as
 * {@link estimateTokens} of it, at least 1. Special-token text (`<|endoftext|>`) is counted as plain text rather
 * than thrown on. With a `limit`, counting stops at the first run that passes it, so the work is bounded by the
 * budget rather than by the text.
 */
export function createPieceCounter(encoder: PieceEncoder, patStr: string): CountTokens {
  const pieces = new RegExp(patStr, "gu");
  return (text, limit = Number.POSITIVE_INFINITY) => {
    let total = 0;
    let runStart = 0;
    let runEnd = 0;
    const flush = () => {
      if (runEnd > runStart) total += encoder.encode(text.slice(runStart, runEnd), [], []).length;
      runStart = runEnd;
    };
    for (const match of text.matchAll(pieces)) {
      const end = match.index + match[0].length;
      if (match[0].length > LONG_PIECE_UNITS) {
        runEnd = match.index; // Anything the pattern skipped before the piece stays in the run.
        flush();
        total += Math.max(1, estimateTokens(match[0]));
        runStart = runEnd = end;
      } else {
        runEnd = end;
        if (runEnd - runStart >= SEGMENT_UNITS) flush();
      }
      if (total > limit) return total;
    }
    runEnd = text.length;
    flush();
    return total;
  };
}
