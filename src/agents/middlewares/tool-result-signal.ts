// Port of DeerFlow agents/middlewares/tool_result_meta.py (normalize_tool_message): what a tool result says about
// progress, read from its text and status. Used by ToolProgressMiddleware only, so no run pays for it when
// `tool_progress` is off (upstream stamps every result in ToolErrorHandlingMiddleware).
import type { ToolMessage } from "@langchain/core/messages";

/** Where the signal is stored on a result (`additional_kwargs`), as upstream: a stamp already there is kept. */
export const TOOL_META_KEY = "deerflow_tool_meta";

/** Upstream's ToolResultMeta. */
export interface ToolResultMeta {
  status: "success" | "error" | "partial_success";
  error_type: string | null;
  recoverable_by_model: boolean;
  recommended_next_action: "continue" | "rewrite_query" | "try_alternative" | "summarize" | "stop";
  source: "exception" | "tool_return" | "content_analysis" | "progress_middleware";
}

type ErrorAttrs = Pick<ToolResultMeta, "error_type" | "recoverable_by_model" | "recommended_next_action">;

// Upstream's _ERROR_RULES, first match wins; bare status codes match as whole words ("took 500ms" is not a 500).
const ERROR_RULES: Array<[string[], ErrorAttrs]> = [
  [["401", "403", "unauthorized", "authentication", "invalid api key"], { error_type: "auth", recoverable_by_model: false, recommended_next_action: "stop" }],
  [["rate limit", "rate limited", "rate_limit"], { error_type: "rate_limited", recoverable_by_model: false, recommended_next_action: "summarize" }],
  [["timeout", "timed out", "connection", "network error", "temporarily unavailable"], { error_type: "transient", recoverable_by_model: false, recommended_next_action: "try_alternative" }],
  [["not configured", "not installed", "missing required", "disabled", "no api key"], { error_type: "config", recoverable_by_model: false, recommended_next_action: "stop" }],
  [["permission denied", "access denied", "path traversal", "forbidden"], { error_type: "permission", recoverable_by_model: true, recommended_next_action: "try_alternative" }],
  [["no results found", "no content found", "no images found", "no results"], { error_type: "no_results", recoverable_by_model: true, recommended_next_action: "rewrite_query" }],
  [["not found", "no such file", "does not exist", "404"], { error_type: "not_found", recoverable_by_model: true, recommended_next_action: "rewrite_query" }],
  [["unexpected error", "internal error", "500"], { error_type: "internal", recoverable_by_model: false, recommended_next_action: "stop" }],
];
const UNKNOWN_ERROR: ErrorAttrs = { error_type: "unknown", recoverable_by_model: true, recommended_next_action: "try_alternative" };
const PARTIAL_MARKERS = ["partial results", "limited results", "truncated", "results may be incomplete", "no results found", "no content found", "no images found"];
const NO_ERROR_WORDS = new Set(["none", "null", "false", "no", "ok", "success", "n/a", ""]);
const NUMERIC = new Map(ERROR_RULES.flatMap(([kws]) => kws.filter((k) => /^\d+$/.test(k)).map((k) => [k, new RegExp(`\\b${k}\\b`)] as const)));

/** Upstream's keyword classification of an error text (auth, rate_limited, transient, ..., else unknown). */
export function classifyErrorText(text: string): ErrorAttrs {
  const lower = text.toLowerCase();
  for (const [keywords, attrs] of ERROR_RULES) {
    if (keywords.some((k) => (NUMERIC.get(k)?.test(lower) ?? lower.includes(k)))) return { ...attrs };
  }
  return { ...UNKNOWN_ERROR };
}

/** The `error` field of a JSON object result (`{"error": "..."}`), unless it means "no error"; else null. */
function jsonErrorText(content: string): string | null {
  if (!content.startsWith("{")) return null;
  let data: unknown;
  try {
    data = JSON.parse(content);
  } catch {
    return null;
  }
  const error = data && typeof data === "object" && !Array.isArray(data) ? (data as Record<string, unknown>).error : undefined;
  if (!error) return null;
  if (typeof error === "string") return NO_ERROR_WORDS.has(error.toLowerCase().trim()) ? null : error;
  return JSON.stringify(error);
}

const meta = (status: ToolResultMeta["status"], source: ToolResultMeta["source"], attrs: Partial<ErrorAttrs> = {}): ToolResultMeta => ({
  status, source, error_type: null, recoverable_by_model: true, recommended_next_action: "continue", ...attrs,
});

/**
 * The progress signal of a tool result: its own `deerflow_tool_meta` stamp when it has one, else upstream's
 * classification: an error status or an "Error:" prefix is an error classified by its words (a JSON
 * `{"error": ...}` by that field only), a JSON error field alone is an error, a "partial results" / "no results
 * found" style text is a partial success, anything else a success. Only string content is read.
 */
export function toolResultMeta(message: ToolMessage): ToolResultMeta {
  const stamped = message.additional_kwargs?.[TOOL_META_KEY] as ToolResultMeta | undefined;
  if (stamped && typeof stamped === "object" && typeof stamped.status === "string") return stamped;
  const content = typeof message.content === "string" ? message.content : "";
  if (message.status === "error" && !content.startsWith("Error:")) {
    const jsonError = jsonErrorText(content);
    let isJsonObject = false;
    if (jsonError === null && content.startsWith("{")) {
      try {
        isJsonObject = typeof JSON.parse(content) === "object";
      } catch {
        /* plain text */
      }
    }
    // A JSON object without an error field is not classified by its incidental values ({"user_id": 401}).
    return meta("error", "tool_return", jsonError !== null ? classifyErrorText(jsonError) : isJsonObject ? UNKNOWN_ERROR : classifyErrorText(content));
  }
  if (content.startsWith("Error:")) return meta("error", "tool_return", classifyErrorText(content.slice(6)));
  const jsonError = jsonErrorText(content);
  if (jsonError !== null) return meta("error", "tool_return", classifyErrorText(jsonError));
  const lower = content.toLowerCase();
  if (PARTIAL_MARKERS.some((m) => lower.includes(m))) return meta("partial_success", "content_analysis", { recommended_next_action: "rewrite_query" });
  return meta("success", "content_analysis");
}
