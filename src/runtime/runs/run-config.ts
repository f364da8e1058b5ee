// Port of DeerFlow gateway services (build_run_config): the RunnableConfig a run starts from.
import { validateAgentName } from "../../config/agent-config.js";
import { ValidationError } from "../../errors.js";
import type { RunRequest } from "./run-request.js";

/** `body.context` keys copied into both `configurable` and `context` (values already in `body.config` win). */
export const CONTEXT_WHITELIST = [
  "model_name", "mode", "thinking_enabled", "reasoning_effort", "is_plan_mode", "subagent_enabled",
  "max_concurrent_subagents", "max_total_subagents", "agent_name", "is_bootstrap",
] as const;
/** `body.context` keys copied into `context` only (never checkpointed in `configurable`). */
export const CONTEXT_ONLY_KEYS = ["github_token", "disable_clarification"] as const;
/** Identity keys the server owns in both containers; caller values are removed. */
const SERVER_OWNED = ["is_internal", "authz_attributes", "channel_user_id", "langgraph_auth_user", "langgraph_auth_user_id", "user_role", "oauth_provider", "oauth_id"];

const DEFAULT_RECURSION_LIMIT = 100;
/** Assistant ids that mean the default lead agent. */
export const DEFAULT_ASSISTANT_IDS = new Set(["lead_agent"]);

/** The config a run is built with. `context` is LangGraph's runtime context (the factory and tools read it). */
export interface RunConfig {
  configurable: Record<string, unknown>;
  context: Record<string, unknown>;
  metadata: Record<string, unknown>;
  recursion_limit: number;
  tags?: string[];
  run_name?: string;
}

/**
 * Clamps `recursion_limit`: a positive integer is capped at `max`; absent, 0, negatives, non-integers, strings
 * and booleans give 100.
 */
export function clampRecursionLimit(value: unknown, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) return DEFAULT_RECURSION_LIMIT;
  return Math.min(value, max);
}

/**
 * Maps an assistant id to a custom agent name: null / `lead_agent` mean the default agent (null); anything else is
 * trimmed, lowercased, `_` -> `-`, and must then match `^[a-z0-9-]+$`.
 * @throws ValidationError naming the rule.
 */
export function assistantIdToAgentName(assistantId: string | null | undefined): string | null {
  if (assistantId == null || DEFAULT_ASSISTANT_IDS.has(assistantId)) return null;
  const name = assistantId.trim().toLowerCase().replace(/_/g, "-");
  if (!/^[a-z0-9-]+$/.test(name)) throw new ValidationError(`Invalid assistant_id '${assistantId}': agent names must match ^[A-Za-z0-9-]+$ (underscores become hyphens)`);
  return name;
}

/**
 * Assembles the run's config from the request (DeerFlow `build_run_config` + the context merge):
 * `body.config.context` when present becomes the context and `configurable` shrinks to `{thread_id}`; otherwise
 * `configurable` is the caller's plus the route's `thread_id` (route wins). A custom assistant id sets
 * `agent_name` in both unless one is given explicitly. Whitelisted `body.context` keys are added where absent;
 * `user_id` is the server's (`default` without auth). Server-owned identity keys are stripped.
 * @throws ValidationError for a non-object `config.context` or an invalid `agent_name`.
 */
export function buildRunConfig(request: RunRequest, threadId: string, options: { maxRecursionLimit: number; userId?: string }): RunConfig {
  const bodyConfig = request.config ?? {};
  const userId = options.userId ?? "default";
  let configurable: Record<string, unknown>;
  let context: Record<string, unknown>;
  if ("context" in bodyConfig) {
    const raw = bodyConfig.context ?? {};
    if (typeof raw !== "object" || Array.isArray(raw)) throw new ValidationError("config.context must be an object");
    context = Object.fromEntries(Object.entries(raw).filter(([k]) => !k.startsWith("__")));
    context.thread_id = threadId;
    configurable = { thread_id: threadId };
  } else {
    configurable = { ...(bodyConfig.configurable ?? {}), thread_id: threadId };
    context = {};
  }
  const agentName = assistantIdToAgentName(request.assistant_id);
  const explicit = configurable.agent_name ?? context.agent_name;
  if (explicit !== undefined && explicit !== null) {
    configurable.agent_name = context.agent_name = explicit;
  } else if (agentName) {
    configurable.agent_name = context.agent_name = agentName;
  }
  const bodyContext = request.context ?? {};
  for (const key of CONTEXT_WHITELIST) {
    if (!(key in bodyContext)) continue;
    if (!(key in configurable)) configurable[key] = bodyContext[key];
    if (!(key in context)) context[key] = bodyContext[key];
  }
  for (const key of CONTEXT_ONLY_KEYS) if (key in bodyContext && !(key in context)) context[key] = bodyContext[key];
  for (const key of SERVER_OWNED) {
    delete configurable[key];
    delete context[key];
  }
  delete configurable.user_id;
  delete configurable.app_config;
  context.user_id = userId;
  context.is_internal = false;
  for (const container of [configurable, context]) {
    if (container.agent_name !== undefined && container.agent_name !== null) validateAgentName(String(container.agent_name));
  }
  const metadata = { ...(bodyConfig.metadata ?? {}), ...(request.metadata ?? {}) };
  const runConfig: RunConfig = {
    configurable,
    context,
    metadata,
    recursion_limit: clampRecursionLimit(bodyConfig.recursion_limit, options.maxRecursionLimit),
  };
  if (bodyConfig.tags) runConfig.tags = bodyConfig.tags;
  const runName = bodyConfig.run_name ?? (context.agent_name as string | undefined) ?? request.assistant_id ?? "lead_agent";
  runConfig.run_name = runName;
  return runConfig;
}
