// Port of DeerFlow agents/middlewares/read_before_write_middleware.py (ReadBeforeWriteMiddleware, issue #3857).
import { createHash } from "node:crypto";
import { posix } from "node:path";
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ToolCallHandler } from "langchain";
import { getLogger } from "../../logger.js";
import { threadSandbox, type ToolRuntimeConfig } from "../../tools/sandbox/runtime.js";
import { runContextOf } from "../run-context.js";
import { DeerflowMiddleware } from "./base.js";
import { toolMessageOf } from "./tool-result-meta.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];

/** Where a successful `read_file` result records what it showed: `{path, hash}` (sha256 of the whole file). */
export const READ_MARK_KEY = "deerflow_read_mark";
const READ_TOOLS = new Set(["read_file"]);
const WRITE_TOOLS = new Set(["write_file", "str_replace"]);

const hashOf = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** Upstream's refusal text. */
export const blockMessage = (tool: string, path: string) =>
  `Error: ${tool} blocked — ${path} already exists and you have not read its current version. Any write invalidates earlier reads, so re-read before every modification. Call read_file on it (a ranged read of the relevant section is enough, e.g. the last ~30 lines before an append), check what is already there, then retry.`;

/** The hash of the newest read mark for `path` in the conversation, if any. */
function latestMark(messages: readonly BaseMessage[] | undefined, path: string): string | null {
  for (let i = (messages?.length ?? 0) - 1; i >= 0; i--) {
    const m = messages![i];
    if (!ToolMessage.isInstance(m)) continue;
    const mark = m.additional_kwargs?.[READ_MARK_KEY] as { path?: unknown; hash?: unknown } | undefined;
    if (mark && mark.path === path) return typeof mark.hash === "string" ? mark.hash : null;
  }
  return null;
}

/** Per (thread, path) chains: the gate check and the write it allows run before the next gated call on the file. */
const gates = new Map<string, Promise<unknown>>();

async function serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const before = gates.get(key) ?? Promise.resolve();
  const run = before.catch(() => undefined).then(fn);
  const tail = run.catch(() => undefined);
  gates.set(key, tail);
  try {
    return await run;
  } finally {
    if (gates.get(key) === tail) gates.delete(key);
  }
}

/**
 * A version gate on file writes. A successful `read_file` result gets a read mark (sha256 of the file's whole
 * current content) in `additional_kwargs.deerflow_read_mark`, so the gate's state lives in the conversation and
 * goes when summarization removes the read. `write_file` (overwrite or append) and `str_replace` on a file that
 * exists run only when the newest mark for that path hashes its current content; otherwise the call does not run
 * and the model gets upstream's "Error: ... blocked" result (status error). Writes never refresh marks: every
 * modification needs a fresh read. A file the gate cannot inspect (missing: a create; binary; too large; no
 * thread) is let through (fail-open, as upstream). Check and write are serialized per thread and path.
 * Hook: wrapToolCall.
 */
export class ReadBeforeWriteMiddleware extends DeerflowMiddleware {
  readonly name = "ReadBeforeWriteMiddleware";

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const name = request.toolCall.name;
    if (!READ_TOOLS.has(name) && !WRITE_TOOLS.has(name)) return handler(request);
    const raw = (request.toolCall.args as { path?: unknown } | undefined)?.path;
    if (typeof raw !== "string" || !raw) return handler(request);
    const path = posix.normalize(raw);
    const key = `${runContextOf(request.runtime as never).threadId ?? "global"}\u0000${path}`;
    return serialized(key, async () => {
      if (WRITE_TOOLS.has(name)) {
        const current = await this.currentHash(request, path);
        if (current !== null && latestMark(request.state?.messages as BaseMessage[] | undefined, path) !== current) {
          return new ToolMessage({ content: blockMessage(name, raw), tool_call_id: request.toolCall.id ?? "", name, status: "error" });
        }
        return handler(request);
      }
      const result = await handler(request);
      const message = toolMessageOf(result);
      if (message && message.status !== "error" && !(typeof message.content === "string" && message.content.startsWith("Error:"))) {
        const hash = await this.currentHash(request, path);
        if (hash !== null) message.additional_kwargs = { ...message.additional_kwargs, [READ_MARK_KEY]: { path, hash } };
      }
      return result;
    });
  }

  /** sha256 of the file's current content; null when it cannot be inspected (missing, binary, too large, no thread). */
  private async currentHash(request: ToolCallRequest, path: string): Promise<string | null> {
    try {
      const sandbox = await threadSandbox(request.runtime as unknown as ToolRuntimeConfig, { record: false });
      const read = await sandbox.readFile(path);
      return read.truncated ? null : hashOf(read.text);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      
      if (code !== "ENOENT") getLogger().debug({ path, err: (err as Error).message }, "read-before-write gate could not inspect the file; allowing the call");
      return null;
    }
  }
}
