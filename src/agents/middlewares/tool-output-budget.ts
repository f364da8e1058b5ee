// Port of DeerFlow agents/middlewares/tool_output_budget_middleware.py (ToolOutputBudgetMiddleware) with a plain
// text synopsis (tool_output_synopsis.py's typed JSON/table synopses are not ported).
import { randomUUID } from "node:crypto";
import { ToolMessage } from "@langchain/core/messages";
import type { ToolCallHandler } from "langchain";
import { getLogger } from "../../logger.js";
import { VIRTUAL_ROOT } from "../../sandbox/paths.js";
import { threadSandbox, type ToolRuntimeConfig } from "../../tools/sandbox/runtime.js";
import { DeerflowMiddleware } from "./base.js";
import { mapToolMessage } from "./tool-result-meta.js";
import type { ToolOutputConfig } from "./tool-output-budget-options.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];

/** Characters written per write call: a huge result is saved without a second full copy in memory. */
const WRITE_CHUNK_CHARS = 1 << 20;

/** A tool name as a file-name part (no separators, no traversal). */
const safeName = (name: string) => name.replace(/\.\./g, "").replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 64) || "unknown";

/** Lines in `text`, counted without splitting it (a 50 MB result is not copied). */
function countLines(text: string): number {
  let n = text.length ? 1 : 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/**
 * What the model sees instead of a saved result (upstream `render_tool_output_preview`): where the full output
 * is, its size, a head + tail sample clipped to `preview_head_chars` / `preview_tail_chars`, and how to read more.
 */
export function renderSynopsis(content: string, toolName: string, virtualPath: string, config: ToolOutputConfig): string {
  const total = content.length;
  const head = content.slice(0, config.preview_head_chars);
  const tail = config.preview_tail_chars > 0 && total > head.length ? content.slice(Math.max(head.length, total - config.preview_tail_chars)) : "";
  return [
    `[Full ${toolName} output saved to ${virtualPath} (${total} chars, ~${Math.floor(total / 4)} tokens).]`,
    "[Preview kind: text. The output was too large to show inline.]",
    "",
    "Text output:",
    `- ${total} characters in ${countLines(content)} lines.`,
    "",
    "Raw sample (head + tail, clipped to head_chars / tail_chars):",
    tail ? `${head}\n...\n${tail}` : head,
    "",
    "Access:",
    `- Use read_file on ${virtualPath} with start_line and end_line to inspect the raw output.`,
  ].join("\n");
}

/** Head + tail truncation when the result cannot be saved (upstream's fallback path). */
export function truncateHeadTail(content: string, config: ToolOutputConfig): string {
  const omitted = content.length - config.fallback_head_chars - config.fallback_tail_chars;
  if (omitted <= 0) return content.slice(0, config.fallback_max_chars);
  const tail = config.fallback_tail_chars ? content.slice(-config.fallback_tail_chars) : "";
  return `${content.slice(0, config.fallback_head_chars)}\n\n... [${omitted} characters truncated: the full output could not be saved] ...\n\n${tail}`;
}

/**
 * Keeps oversized tool results out of the model's context. A string result longer than the tool's budget
 * (`tool_overrides[name]`, else `externalize_min_chars`; tools in `exempt_tools` never) is written in 1 MB chunks
 * to `/mnt/user-data/outputs/<storage_subdir>/<tool>-<id>.txt` in the thread's sandbox and replaced by
 * {@link renderSynopsis}; the message keeps its id, name and status, and records the path in
 * `additional_kwargs.deerflow_tool_output_path`. When the file cannot be written, a result above
 * `fallback_max_chars` is cut to head + tail instead. Hook: wrapToolCall.
 */
export class ToolOutputBudgetMiddleware extends DeerflowMiddleware {
  readonly name = "ToolOutputBudgetMiddleware";
  private readonly exempt: ReadonlySet<string>;

  constructor(private readonly config: ToolOutputConfig) {
    super();
    this.exempt = new Set(config.exempt_tools);
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const name = request.toolCall.name;
    if (this.exempt.has(name)) return handler(request);
    return mapToolMessage(await handler(request), (result) => this.apply(request, name, result));
  }

  private async apply(request: ToolCallRequest, name: string, result: ToolMessage): Promise<ToolMessage> {
    if (typeof result.content !== "string") return result;
    const budget = this.config.tool_overrides[name] ?? this.config.externalize_min_chars;
    const content = result.content;
    if (content.length <= budget) return result;
    const saved = await this.save(request, name, content);
    if (!saved && content.length <= this.config.fallback_max_chars) return result;
    const replaced = saved ? renderSynopsis(content, name, saved, this.config) : truncateHeadTail(content, this.config);
    return new ToolMessage({
      content: replaced,
      id: result.id,
      name: result.name,
      tool_call_id: result.tool_call_id,
      status: result.status,
      artifact: result.artifact,
      additional_kwargs: { ...result.additional_kwargs, ...(saved ? { deerflow_tool_output_path: saved } : {}) },
      response_metadata: result.response_metadata,
    });
  }

  /** Writes `content` into the thread's outputs; the virtual path, or null when there is no thread or it fails. */
  private async save(request: ToolCallRequest, toolName: string, content: string): Promise<string | null> {
    const virtualPath = `${VIRTUAL_ROOT}/outputs/${this.config.storage_subdir}/${safeName(toolName)}-${randomUUID().replace(/-/g, "").slice(0, 12)}.txt`;
    try {
      const sandbox = await threadSandbox(request.runtime as unknown as ToolRuntimeConfig, { record: false });
      for (let at = 0; at < content.length; ) {
        // A chunk ends before a lone high surrogate so no character is split between two writes.
        let end = Math.min(content.length, at + WRITE_CHUNK_CHARS);
        if (end < content.length && /[\uD800-\uDBFF]/.test(content[end - 1])) end--;
        await sandbox.writeFile(virtualPath, content.slice(at, end), at > 0);
        at = end;
      }
      return virtualPath;
    } catch (err) {
      getLogger().warn({ tool: toolName, err: (err as Error).message }, "tool output could not be saved; truncating it instead");
      return null;
    }
  }
}
