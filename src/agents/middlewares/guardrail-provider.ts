// Port of DeerFlow guardrails/provider.py and guardrails/builtin.py: what a guardrail provider is asked and answers,
// and the built-in allowlist / denylist provider.

/** What a provider is asked for each tool call (DeerFlow `GuardrailRequest`, snake_case as upstream). */
export interface GuardrailRequest {
  tool_name: string;
  tool_input: Record<string, unknown>;
  /** The configured `passport` (OAP agent id), or null. */
  agent_id: string | null;
  thread_id: string | null;
  run_id: string | null;
  tool_call_id: string | null;
  is_subagent: boolean;
  /** ISO time of the check. */
  timestamp: string;
  user_id: string | null;
  /** The run's user's role (`admin`, `user`), or null when the run has none. */
  user_role: string | null;
  is_internal: boolean;
}

/** Why a call was allowed or denied (OAP reason: `oap.tool_not_allowed`, `authz.denied`, ...). */
export interface GuardrailReason {
  code: string;
  message?: string;
}

/** A provider's verdict (DeerFlow `GuardrailDecision`). */
export interface GuardrailDecision {
  allow: boolean;
  reasons?: GuardrailReason[];
  policy_id?: string | null;
}

/**
 * The contract of a guardrail provider (DeerFlow `GuardrailProvider`): any object with a `name` and an `evaluate`
 * (sync or async) or an `aevaluate` (async; preferred when both exist, as upstream's async path). A provider named
 * by `use:` is a class constructed with the section's `config` object, or a ready object.
 */
export interface GuardrailProvider {
  name?: string;
  evaluate?(request: GuardrailRequest): GuardrailDecision | Promise<GuardrailDecision>;
  aevaluate?(request: GuardrailRequest): Promise<GuardrailDecision>;
}

/** True for objects that can answer a {@link GuardrailRequest}. */
export function isGuardrailProvider(value: unknown): value is GuardrailProvider {
  if (typeof value !== "object" || value === null) return false;
  const v = value as GuardrailProvider;
  return typeof v.evaluate === "function" || typeof v.aevaluate === "function";
}

/** Settings of {@link AllowlistProvider} (upstream's keyword arguments). */
export interface AllowlistProviderConfig {
  /** Only these tools may run; absent or null allows every tool, `[]` allows none. */
  allowed_tools?: string[] | null;
  /** These tools never run (checked after the allowlist). */
  denied_tools?: string[] | null;
}

const stringList = (value: unknown, key: string): string[] | null => {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) throw new TypeError(`AllowlistProvider: ${key} must be a list of tool names`);
  return value as string[];
};

/**
 * Upstream's built-in allowlist / denylist provider (`deerflow.guardrails.builtin:AllowlistProvider`). An explicit
 * empty `allowed_tools` allows nothing (never read as "no allowlist", which would fail open).
 * @throws TypeError when a list is not a list of strings.
 */
export class AllowlistProvider implements GuardrailProvider {
  readonly name = "allowlist";
  private readonly allowed: ReadonlySet<string> | null;
  private readonly denied: ReadonlySet<string>;

  constructor(config: AllowlistProviderConfig = {}) {
    const allowed = stringList(config.allowed_tools, "allowed_tools");
    this.allowed = allowed ? new Set(allowed) : null;
    this.denied = new Set(stringList(config.denied_tools, "denied_tools") ?? []);
  }

  evaluate(request: GuardrailRequest): GuardrailDecision {
    const tool = request.tool_name;
    if (this.allowed && !this.allowed.has(tool)) return { allow: false, reasons: [{ code: "oap.tool_not_allowed", message: `tool '${tool}' not in allowlist` }] };
    if (this.denied.has(tool)) return { allow: false, reasons: [{ code: "oap.tool_not_allowed", message: `tool '${tool}' is denied` }] };
    return { allow: true, reasons: [{ code: "oap.allowed" }] };
  }
}
