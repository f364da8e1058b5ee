// The tool guards of a lead-agent build (DeerFlow authz/tool_filter.py, authz/runtime.py and the guardrail part of
// tool_error_handling_middleware.py `_build_runtime_middlewares`): providers loaded from `guardrails:` and
// `authorization:`, the build-time tool filter by role, and the call-time GuardrailMiddlewares.
import type { AgentMiddleware } from "langchain";
import { getProjectRoot } from "../../config/paths.js";
import type { AppConfig } from "../../config/schema.js";
import { ConfigError } from "../../errors.js";
import { getLogger } from "../../logger.js";
import { resolveUse } from "../../models/resolve-use.js";
import { AllowlistProvider, GuardrailMiddleware, isGuardrailProvider, type GuardrailProvider } from "../middlewares/guardrails.js";
import type { GuardProviderConfig } from "../middlewares/guardrails-options.js";
import { GuardrailAuthorizationAdapter, isAuthorizationProvider, RbacAuthorizationProvider, type AuthorizationProvider } from "../middlewares/rbac-provider.js";
import type { RunContextView } from "../run-context.js";

/** Upstream's built-in provider paths, served by this gateway's ports. */
const BUILTIN_PROVIDERS: Record<string, new (config: never) => object> = {
  "deerflow.guardrails.builtin:AllowlistProvider": AllowlistProvider,
  "deerflow.authz.rbac:RbacAuthorizationProvider": RbacAuthorizationProvider,
};

/**
 * Tools some builds add beyond the ones at hand (bootstrap, custom agents, switches): a role naming one of them is
 * not warned about in a build that lacks it.
 */
const BRANCH_TOOLS = new Set([
  "setup_agent", "update_agent", "skill_manage", "tool_search", "describe_skill", "task", "view_image", "ask_clarification",
  "present_files", "list_uploaded_files", "write_todos", "memory_search", "memory_add", "memory_update", "memory_delete",
]);

type Section = "guardrails" | "authorization";

/**
 * Loads the provider a section names: upstream's built-in paths map to the ports here; any other `use:` is
 * imported (`module:Export`, files relative to the project root) and, when a class, constructed with `config`.
 * @throws ConfigError naming `<section>.provider.use` and the path: missing module or export, a constructor that
 *   throws, or a value that is not a provider of the section's kind.
 */
export async function loadGuardProvider(section: "guardrails", cfg: GuardProviderConfig): Promise<GuardrailProvider>;
export async function loadGuardProvider(section: "authorization", cfg: GuardProviderConfig): Promise<AuthorizationProvider>;
export async function loadGuardProvider(section: Section, cfg: GuardProviderConfig): Promise<GuardrailProvider | AuthorizationProvider> {
  const where = `${section}.provider.use '${cfg.use}'`;
  let value: unknown = BUILTIN_PROVIDERS[cfg.use];
  if (!value) {
    try {
      value = await resolveUse(cfg.use, getProjectRoot());
    } catch (err) {
      throw new ConfigError(`${where} cannot be loaded: ${(err as Error).message}`, { cause: err });
    }
  }
  let provider: unknown = value;
  if (typeof value === "function") {
    try {
      provider = new (value as new (config: Record<string, unknown>) => unknown)({ ...cfg.config });
    } catch (err) {
      throw new ConfigError(`${where} cannot be constructed: ${(err as Error).message}`, { cause: err });
    }
  }
  const ok = section === "guardrails" ? isGuardrailProvider(provider) : isAuthorizationProvider(provider);
  if (!ok) {
    const needs = section === "guardrails" ? "an evaluate or aevaluate method" : "authorize and filterResources methods";
    throw new ConfigError(`${where} is not a ${section} provider: it needs ${needs}`);
  }
  return provider as GuardrailProvider | AuthorizationProvider;
}

/** A loaded `authorization` section: the provider, checked against `default_role` when it is the built-in RBAC. */
async function loadAuthorization(appConfig: AppConfig): Promise<AuthorizationProvider | null> {
  const cfg = appConfig.authorization;
  if (!cfg.enabled || !cfg.provider) return null;
  const provider = await loadGuardProvider("authorization", cfg.provider);
  if (provider instanceof RbacAuthorizationProvider) {
    try {
      provider.validateRole(cfg.default_role, "authorization.default_role");
    } catch (err) {
      throw new ConfigError(`authorization.provider.use '${cfg.provider.use}': ${(err as Error).message}`, { cause: err });
    }
  }
  return provider;
}

/**
 * Loads every guard provider the config turns on, so a start with a provider that cannot be loaded is refused with
 * a message naming it (the same check as each build's). @throws ConfigError as {@link loadGuardProvider}.
 */
export async function checkGuardProviders(appConfig: AppConfig): Promise<void> {
  await loadAuthorization(appConfig);
  if (appConfig.guardrails.enabled && appConfig.guardrails.provider) await loadGuardProvider("guardrails", appConfig.guardrails.provider);
}

const warned = new WeakMap<object, Set<string>>();

/** Logs once per config version each tool name a role policy mentions that no build of this gateway binds. */
function warnUnknownTools(appConfig: AppConfig, provider: AuthorizationProvider, candidates: readonly string[]): void {
  const seen = warned.get(appConfig) ?? new Set<string>();
  warned.set(appConfig, seen);
  const known = new Set([...candidates, ...BRANCH_TOOLS]);
  for (const name of provider.referencedTools?.() ?? []) {
    if (known.has(name) || seen.has(name)) continue;
    seen.add(name);
    getLogger().warn({ tool: name }, `authorization: a role names tool '${name}', which no configured tool or built-in has; check the name`);
  }
}

/** What {@link applyToolGuards} returns: the tools to bind and the guard middlewares, outermost first. */
export interface ToolGuards<T extends { name: string }> {
  tools: T[];
  middlewares: AgentMiddleware[];
}

/**
 * Applies `authorization` and `guardrails` to one build. Authorization (when enabled): the tools the run's role may
 * not use are never bound (upstream layer 1; a provider error binds none when `fail_closed`), and a
 * GuardrailMiddleware over the provider refuses a call to them anyway (layer 2; `tool_search` of the build is
 * exempt). Guardrails (when enabled): a GuardrailMiddleware over the configured provider. The authorization guard
 * is outer, so an already-denied tool never reaches an external policy (upstream's order).
 * @param infrastructureTools Tool names created from the already-filtered set (`tool_search`).
 * @throws ConfigError when a provider cannot be loaded.
 */
export async function applyToolGuards<T extends { name: string }>(appConfig: AppConfig, run: RunContextView, tools: T[], infrastructureTools: readonly string[] = []): Promise<ToolGuards<T>> {
  const middlewares: AgentMiddleware[] = [];
  const authz = await loadAuthorization(appConfig);
  if (authz) {
    const cfg = appConfig.authorization;
    warnUnknownTools(appConfig, authz, tools.map((t) => t.name));
    const principal = { user_id: run.userId, role: run.userRole || cfg.default_role };
    let allowed: Set<string>;
    try {
      allowed = new Set(authz.filterResources(principal, "tool", tools.map((t) => t.name)));
    } catch (err) {
      getLogger().warn({ role: principal.role, err: (err as Error).message }, `authorization: the provider failed filtering tools; ${cfg.fail_closed ? "no tools are bound (fail-closed)" : "every tool is bound (fail-open)"}`);
      allowed = new Set(cfg.fail_closed ? [] : tools.map((t) => t.name));
    }
    tools = tools.filter((t) => allowed.has(t.name) || infrastructureTools.includes(t.name));
    middlewares.push(new GuardrailMiddleware(new GuardrailAuthorizationAdapter(authz, cfg.default_role, new Set(infrastructureTools)), { failClosed: cfg.fail_closed, timeoutMs: cfg.timeout_ms, guard: "authorization" }));
  }
  const g = appConfig.guardrails;
  if (g.enabled && g.provider) {
    const provider = await loadGuardProvider("guardrails", g.provider);
    middlewares.push(new GuardrailMiddleware(provider, { failClosed: g.fail_closed, passport: g.passport, timeoutMs: g.timeout_ms }));
  }
  return { tools, middlewares };
}
