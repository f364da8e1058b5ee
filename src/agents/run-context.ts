// What one run carries in LangGraph's runtime context: one schema, one builder, one reader. Every middleware, tool
// and runtime service reads the run's thread, user and config through runContextOf(), so adding a key is one edit
// here and the compiler finds every reader. The user id is set by the server only (the authenticated principal,
// or DEFAULT_USER_ID with auth off); nothing a client sends can change it (DeerFlow gateway services.py
// build_run_config + the auth middleware's identity injection).
import { z } from "zod";
import { hasAppConfigBrand } from "../config/app-config-brand.js";
import type { AppConfig } from "../config/schema.js";
import type { MemoryManager } from "./memory/manager.js";
import type { LocalSandbox } from "../sandbox/local-sandbox.js";
import type { Sandbox } from "../sandbox/sandbox.js";

/** The user every request runs as when auth is disabled, and the owner of pre-auth data. */
export const DEFAULT_USER_ID = "default";

/** Context key of the subagent marker the `task` tool sets on a child run (its type and inherited limits). */
export const SUBAGENT_CONTEXT_KEY = "__subagent";

/** Where tools find a thread's sandbox: the gateway's provider (acquire/release plus direct lookup). */
export interface RunSandboxProvider {
  /** @returns the sandbox id of the thread (the same id for the same thread). */
  acquire(threadId: string, options?: { userId?: string }): string | Promise<string>;
  /** Gives a sandbox id back when a run ends. */
  release(sandboxId: string): void | Promise<void>;
  /** The thread's sandbox (directories confined to `users/<user>/threads/<thread>`). */
  sandboxFor(threadId: string, userId?: string): LocalSandbox;
  /**
   * The sandbox the tools work in, when it is not {@link sandboxFor}'s host directories (DeerFlow's container
   * sandbox: a remote service). @throws SandboxServiceError when the service cannot hand one out.
   */
  toolSandbox?(threadId: string, userId?: string): Promise<Sandbox>;
  /** Called when a run of the thread ends: its sandbox may be reaped once idle (DeerFlow's after-agent release). */
  releaseThread?(threadId: string, userId?: string): void;
}

/** The subagent marker: which type of child this is and what it inherits. */
export const SubagentMarkerSchema = z.looseObject({
  type: z.string().default("general-purpose"),
  /** The parent's tool groups (null = all). */
  tool_groups: z.array(z.string()).nullable().default(null),
  /** The parent's skill allowlist (null = all enabled skills). */
  available_skills: z.array(z.string()).nullable().default(null),
});
/** A parsed {@link SubagentMarkerSchema}. */
export type SubagentMarker = z.infer<typeof SubagentMarkerSchema>;

// The schema module (the AppConfig type) is imported for types only, so the run context never loads it.
const isAppConfig = (v: unknown): v is AppConfig => hasAppConfigBrand(v);
const isMemoryManager = (v: unknown): v is MemoryManager => typeof v === "object" && v !== null && typeof (v as { add?: unknown }).add === "function" && typeof (v as { getContext?: unknown }).getContext === "function";
const isSandboxProvider = (v: unknown): v is RunSandboxProvider =>
  typeof v === "object" && v !== null && typeof (v as RunSandboxProvider).sandboxFor === "function" && typeof (v as RunSandboxProvider).acquire === "function";

/**
 * Everything a run carries. Options a caller may set (model, thinking, plan mode, subagents, agent name,
 * bootstrap) are validated loosely (a wrong type is dropped by the readers, as upstream's `.get()` with defaults
 * does); identity and services are the server's. Unknown keys pass through (LangGraph passes the whole context on).
 */
export const RunContextSchema = z.looseObject({
  thread_id: z.string(),
  run_id: z.string().optional(),
  user_id: z.string(),
  /** The user's role (`admin`, `user`), set by the server from the principal; read by tool authorization. */
  user_role: z.string().optional(),
  agent_name: z.string().nullish(),
  model_name: z.string().nullish(),
  mode: z.string().nullish(),
  thinking_enabled: z.boolean().nullish(),
  reasoning_effort: z.string().nullish(),
  is_plan_mode: z.boolean().nullish(),
  subagent_enabled: z.boolean().nullish(),
  max_concurrent_subagents: z.number().nullish(),
  max_total_subagents: z.number().nullish(),
  is_bootstrap: z.boolean().nullish(),
  disable_clarification: z.boolean().nullish(),
  non_interactive: z.boolean().nullish(),
  is_internal: z.boolean().optional(),
  /** The config snapshot of this run (read once at run start, so a mid-run edit cannot mix two configs). */
  app_config: z.custom<AppConfig>((v) => isAppConfig(v)).optional(),
  /** The process's memory backend (`memory.manager_class`). */
  memory_manager: z.custom<MemoryManager>(isMemoryManager).optional(),
  /** The process's sandbox provider. */
  sandbox_provider: z.custom<RunSandboxProvider>(isSandboxProvider).optional(),
  /** Set on subagent runs only. */
  [SUBAGENT_CONTEXT_KEY]: SubagentMarkerSchema.optional(),
});
/** The runtime context of one run. */
export type RunContext = z.infer<typeof RunContextSchema>;

/** Arguments of {@link buildRunContext}: the server-owned identity, the run's options and its services. */
export interface BuildRunContextArgs {
  threadId: string;
  runId?: string;
  /** The authenticated principal's id (or {@link DEFAULT_USER_ID} with auth off). Never taken from the client. */
  userId: string;
  /** The principal's role (`admin`, `user`); absent for runs with no principal (authorization then uses its default). */
  userRole?: string;
  /** Caller options already filtered by the run-config rules (whitelisted `context` keys, `agent_name`...). */
  options?: Record<string, unknown>;
  appConfig?: AppConfig;
  memoryManager?: MemoryManager;
  sandboxProvider?: RunSandboxProvider;
  subagent?: SubagentMarker;
}

/** Keys only the server sets; values for them in `options` are dropped. */
const SERVER_OWNED_KEYS = ["thread_id", "run_id", "user_id", "user_role", "app_config", "memory_manager", "sandbox_provider", "sandbox_id", "is_internal", SUBAGENT_CONTEXT_KEY] as const;

/**
 * Builds the runtime context of a run: the caller's options first, then the server-owned keys on top (so a client
 * value for `user_id`, `thread_id`, `sandbox_id`, `app_config`... never survives). Used by the run worker, the
 * subagent runtime and the thread service alike.
 * @returns a fresh object the run may mutate (tools record `sandbox_id` on it).
 */
export function buildRunContext(args: BuildRunContextArgs): RunContext {
  const context: Record<string, unknown> = { ...(args.options ?? {}) };
  for (const key of SERVER_OWNED_KEYS) delete context[key];
  context.thread_id = args.threadId;
  if (args.runId !== undefined) context.run_id = args.runId;
  context.user_id = args.userId;
  if (args.userRole !== undefined) context.user_role = args.userRole;
  context.is_internal = false;
  if (args.appConfig) context.app_config = args.appConfig;
  if (args.memoryManager) context.memory_manager = args.memoryManager;
  if (args.sandboxProvider) context.sandbox_provider = args.sandboxProvider;
  if (args.subagent) context[SUBAGENT_CONTEXT_KEY] = args.subagent;
  return context as RunContext;
}

/** The parts of a LangGraph runtime, tool config or RunnableConfig a context is read from. */
export interface RuntimeLike {
  context?: unknown;
  configurable?: Record<string, unknown>;
}

/** The typed view {@link runContextOf} returns. Identity keys are always present. */
export interface RunContextView {
  /** The raw context record (mutable: tools record `sandbox_id` on it). */
  raw: Record<string, unknown>;
  threadId: string | undefined;
  runId: string | undefined;
  /** The server-set user id; {@link DEFAULT_USER_ID} when absent (an SDK embed without a context). */
  userId: string;
  /** The server-set role of the user, or undefined. */
  userRole: string | undefined;
  agentName: string | undefined;
  appConfig: AppConfig | undefined;
  memoryManager: MemoryManager | undefined;
  sandboxProvider: RunSandboxProvider | undefined;
  subagent: SubagentMarker | undefined;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v ? v : undefined);

/**
 * Reads a run's context from a runtime (middleware hooks), a tool's config or a RunnableConfig. `context` wins;
 * `configurable` is the fallback for SDK embeds that pass only `configurable` (as LangGraph Python did). Never
 * throws: a missing or malformed key reads as undefined (the user as {@link DEFAULT_USER_ID}).
 */
export function runContextOf(runtime: RuntimeLike | null | undefined): RunContextView {
  const ctx = runtime?.context;
  const raw = ctx && typeof ctx === "object" ? (ctx as Record<string, unknown>) : {};
  const cfg = runtime?.configurable ?? {};
  const pick = (key: string) => raw[key] ?? cfg[key];
  // Only subagent runs carry the marker; a failed safeParse builds an error object, so absent is not parsed.
  const rawMarker = raw[SUBAGENT_CONTEXT_KEY];
  const marker = rawMarker === undefined ? undefined : SubagentMarkerSchema.safeParse(rawMarker);
  const appConfig = pick("app_config");
  const memory = raw.memory_manager;
  const provider = raw.sandbox_provider;
  return {
    raw,
    threadId: str(pick("thread_id")),
    runId: str(pick("run_id")),
    userId: str(pick("user_id")) ?? DEFAULT_USER_ID,
    userRole: str(raw.user_role),
    agentName: str(pick("agent_name")),
    appConfig: isAppConfig(appConfig) ? appConfig : undefined,
    memoryManager: isMemoryManager(memory) ? memory : undefined,
    sandboxProvider: isSandboxProvider(provider) ? provider : undefined,
    subagent: marker?.success ? marker.data : undefined,
  };
}
