// Port of DeerFlow agents/middlewares/dynamic_context_middleware.py (DynamicContextMiddleware).
import { HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { MemoryConfigSchema } from "../memory/memory-config.js";
import { getLogger } from "../../logger.js";
import { defaultMemoryManager } from "../memory/deermem-manager.js";
import type { MemoryManager } from "../memory/manager.js";
import { DeerflowMiddleware } from "./base.js";
import { hiddenHumanMessage, textOf } from "./message-utils.js";
import { resolveRunScope, RunScopedStore } from "./run-scope.js";
import { runContextOf, type RuntimeLike } from "../run-context.js";
import { parseOnce } from "../parse-once.js";

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/** `YYYY-MM-DD, Weekday` in the server's local time zone (DeerFlow's reminder format). */
export function formatReminderDate(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}, ${WEEKDAYS[date.getDay()]}`;
}

/** The `<memory>` block around a backend's memory text (null when the text is empty). */
export function renderMemory(text: string): string | null {
  return text.trim() ? `<memory>\n${text.trim()}\n</memory>` : null;
}

/** True for a message a user typed (not a hidden/injected one, not a summary). */
export function isEligibleUserMessage(m: BaseMessage): boolean {
  if (!HumanMessage.isInstance(m) || m.name === "summary") return false;
  const kw = m.additional_kwargs ?? {};
  return !kw.hide_from_ui && !kw.dynamic_context_reminder && !(typeof m.id === "string" && m.id.endsWith("__user"));
}

/** Options of {@link DynamicContextMiddleware}. */
export interface DynamicContextOptions {
  /** Memory bucket: the agent's name (null or omitted: the default agent). */
  agentName?: string | null;
  /** The `memory` section; memory is injected when `enabled` and `injection_enabled`. */
  memoryConfig?: Record<string, unknown> | null;
  /** Where memory is read; default the run's manager (run context), else the process-wide default backend. */
  manager?: MemoryManager;
  /** Clock (tests pin the date). */
  now?: () => Date;
}

/**
 * Gives the model today's date and the user's memory on every turn while the system prompt stays static.
 * Before each model call, just before the latest user message, it inserts a SystemMessage
 * `<system-reminder>\n<current_date>YYYY-MM-DD, Weekday</current_date>\n</system-reminder>` (flagged
 * `hide_from_ui`, `dynamic_context_reminder`, `reminder_date`), which SystemMessageCoalescingMiddleware appends to
 * the system prompt, and, when memory is enabled with injection on and not empty, a hidden HumanMessage
 * `<system-reminder>\n<memory>...</memory>\n</system-reminder>` (memory is user-derived data, so it stays at user
 * role). Memory is read once per run. Request-only: nothing is persisted, so the history stays clean and a
 * new day simply shows the new date.
 * Hook: wrapModelCall (DeerFlow uses before_agent with a persisted "ID swap"; this adds no graph node).
 */
export class DynamicContextMiddleware extends DeerflowMiddleware {
  readonly name = "DynamicContextMiddleware";
  readonly agentName: string;
  private readonly memoryConfig: ReturnType<typeof MemoryConfigSchema.parse>;
  private readonly now: () => Date;
  private readonly fixedManager?: MemoryManager;
  private readonly memoryByRun = new RunScopedStore<{ memory?: Promise<string | null> }>(() => ({}));

  constructor(options: DynamicContextOptions = {}) {
    super();
    this.agentName = options.agentName ?? "default";
    this.memoryConfig = parseOnce(MemoryConfigSchema, options.memoryConfig ?? {});
    this.now = options.now ?? (() => new Date());
    this.fixedManager = options.manager;
  }

  /**
   * The `<memory>` block of this run's user and agent (read once per run, from `manager.getContext`), or null when
   * memory or its injection is off or nothing is stored. Errors are logged and give no memory: the run goes on.
   */
  memoryFor(runtime: RuntimeLike | undefined, messages: readonly BaseMessage[]): Promise<string | null> {
    if (!this.memoryConfig.enabled || !this.memoryConfig.injection_enabled) return Promise.resolve(null);
    const run = this.memoryByRun.get(resolveRunScope(runtime, messages));
    if (run.memory) return run.memory;
    const ctx = runContextOf(runtime);
    const manager = this.fixedManager ?? ctx.memoryManager ?? defaultMemoryManager();
    run.memory = (async () => {
      try {
        return renderMemory(await manager.getContext({ userId: ctx.userId, agentName: this.agentName, threadId: ctx.threadId }));
      } catch (err) {
        getLogger().warn({ err: (err as Error).message }, "memory could not be loaded; continuing without it");
        return null;
      }
    })();
    return run.memory;
  }

  /** `messages` with the date reminder (and memory) inserted before the latest user message. */
  inject(messages: readonly BaseMessage[], memory: string | null): BaseMessage[] {
    if (messages.some((m) => SystemMessage.isInstance(m) && m.additional_kwargs?.dynamic_context_reminder)) return [...messages];
    const date = formatReminderDate(this.now());
    const reminder = new SystemMessage({
      content: `<system-reminder>\n<current_date>${date}</current_date>\n</system-reminder>`,
      additional_kwargs: { hide_from_ui: true, dynamic_context_reminder: true, reminder_date: date },
    });
    const injected: BaseMessage[] = [reminder];
    if (memory) injected.push(hiddenHumanMessage(`<system-reminder>\n${memory}\n</system-reminder>`, "memory_context", { dynamic_context_reminder: true }));
    let target = -1;
    for (let i = messages.length - 1; i >= 0 && target === -1; i--) if (isEligibleUserMessage(messages[i])) target = i;
    if (target === -1) return [...messages, ...injected];
    return [...messages.slice(0, target), ...injected, ...messages.slice(target)];
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const history = request.state?.messages ?? request.messages;
    const memory = await this.memoryFor(request.runtime as RuntimeLike, history);
    return handler({ ...request, messages: this.inject(request.messages, memory) }) as never;
  }
}

/** Text of the date in a reminder message, or null (tests and diagnostics). */
export function reminderDateOf(message: BaseMessage): string | null {
  return /<current_date>([^<]*)<\/current_date>/.exec(textOf(message))?.[1] ?? null;
}
