// Port of DeerFlow authz/rbac.py (RbacAuthorizationProvider) and authz/adapter.py (GuardrailAuthorizationAdapter):
// roles with per-role tool permissions, and the adapter that lets GuardrailMiddleware enforce them at call time.
import type { GuardrailDecision, GuardrailProvider, GuardrailRequest } from "./guardrail-provider.js";

/** Who asks (DeerFlow `Principal`): the run's user and role. */
export interface AuthzPrincipal {
  user_id: string | null;
  role: string;
}

/** One authorization question (DeerFlow `AuthzRequest`): may `principal` `action` the `resource` named `target`? */
export interface AuthzRequest {
  principal: AuthzPrincipal;
  /** `tool` for tool calls. */
  resource: string;
  action: string;
  target: string;
}

/** The answer (DeerFlow `AuthzDecision`). */
export type AuthzDecision = GuardrailDecision;

/**
 * The contract of an authorization provider (DeerFlow `AuthorizationProvider`): `authorize` one request (sync or
 * async), and `filterResources` to keep the candidates a principal may see. Errors mean "no answer": the caller's
 * `fail_closed` decides.
 */
export interface AuthorizationProvider {
  name?: string;
  authorize(request: AuthzRequest): AuthzDecision | Promise<AuthzDecision>;
  filterResources(principal: AuthzPrincipal, resourceType: string, candidates: string[]): string[];
  /** Tool names the policy mentions (for the unknown-tool warning); optional. */
  referencedTools?(): string[];
}

/** True for objects shaped as an {@link AuthorizationProvider}. */
export function isAuthorizationProvider(value: unknown): value is AuthorizationProvider {
  if (typeof value !== "object" || value === null) return false;
  const v = value as AuthorizationProvider;
  return typeof v.authorize === "function" && typeof v.filterResources === "function";
}

/** Resource kinds upstream's RBAC names; only `tools` is enforced here, the others must allow everything. */
const RESOURCE_KEYS = new Set(["tools", "models", "skills", "sandbox", "mcp_servers", "routes"]);
const ALL = Symbol("all");

interface Policy {
  allowed: ReadonlySet<string> | typeof ALL;
  denied: ReadonlySet<string>;
}

const nameList = (value: unknown, where: string, key: string): string[] => {
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || !v)) throw new Error(`${where}: ${key} must be '*', a boolean or a list of names`);
  return value as string[];
};

/** Compiles one `{allow, deny}` policy (upstream `_compile_resource_policy`); deny always wins. */
function compilePolicy(where: string, raw: unknown): Policy {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new Error(`${where} must be a mapping with 'allow' and/or 'deny'`);
  const policy = raw as Record<string, unknown>;
  const unknown = Object.keys(policy).filter((k) => k !== "allow" && k !== "deny");
  if (unknown.length) throw new Error(`${where}: unknown policy keys ${unknown.join(", ")}; supported: allow, deny`);
  const allow = policy.allow;
  let allowed: Policy["allowed"];
  if (allow === undefined || allow === true || allow === "*") allowed = ALL;
  else if (allow === false) allowed = new Set();
  else if (allow === null) throw new Error(`${where}: allow must not be null; omit it, or use '*', a boolean or a list`);
  else if (typeof allow === "string") throw new Error(`${where}: allow must be '*' when a string, got '${allow}'`);
  else allowed = new Set(nameList(allow, where, "allow"));
  if (policy.deny === null) throw new Error(`${where}: deny must not be null; omit it for no deny list`);
  const denied = new Set(policy.deny === undefined ? [] : nameList(policy.deny, where, "deny"));
  return { allowed, denied };
}

const permits = (policy: Policy, target: string) => !policy.denied.has(target) && (policy.allowed === ALL || policy.allowed.has(target));

/** Settings of {@link RbacAuthorizationProvider}: `roles: {<role>: {tools: {allow, deny}}}`. */
export interface RbacConfig {
  roles?: unknown;
}

/**
 * Upstream's built-in role-based provider (`deerflow.authz.rbac:RbacAuthorizationProvider`). Each role maps
 * `tools` to `{allow: '*' | true | false | [names], deny: [names]}`; deny wins; a role without a `tools` policy may
 * use every tool; an unknown role is an error (so `fail_closed` decides, never a silent allow). This gateway
 * enforces tool permissions only: a `models`, `skills`, `sandbox`, `mcp_servers` or `routes` policy that restricts
 * anything is refused at construction (it would otherwise be silently ignored); one that allows everything is
 * accepted.
 * @throws Error naming the role and key for a malformed policy or a restriction this gateway does not enforce.
 */
export class RbacAuthorizationProvider implements AuthorizationProvider {
  readonly name = "rbac";
  private readonly tools = new Map<string, Policy | null>();

  constructor(config: RbacConfig = {}) {
    const extra = Object.keys(config).filter((k) => k !== "roles");
    if (extra.length) throw new Error(`unknown provider config keys ${extra.join(", ")}; supported: roles`);
    const roles = config.roles;
    if (roles === undefined) throw new Error("missing required provider config key 'roles'");
    if (typeof roles !== "object" || roles === null || Array.isArray(roles)) throw new Error("roles must be a mapping of role name to policies");
    for (const [role, policies] of Object.entries(roles as Record<string, unknown>)) {
      if (typeof policies !== "object" || policies === null || Array.isArray(policies)) throw new Error(`role '${role}' must be a mapping of resource to policy`);
      let tools: Policy | null = null;
      for (const [resource, raw] of Object.entries(policies as Record<string, unknown>)) {
        const where = `role '${role}' resource '${resource}'`;
        if (!RESOURCE_KEYS.has(resource)) throw new Error(`${where}: unknown resource; known: ${[...RESOURCE_KEYS].join(", ")}`);
        const policy = compilePolicy(where, raw);
        if (resource === "tools") tools = policy;
        else if (policy.allowed !== ALL || policy.denied.size) throw new Error(`${where}: only tool permissions are offered by deerflow-gateway; a '${resource}' policy must allow everything ({allow: "*"}) or be left out`);
      }
      this.tools.set(role, tools);
    }
  }

  /** @throws Error for a role the policy does not define (upstream `validate_role`). */
  validateRole(role: string, field = "role"): void {
    if (!this.tools.has(role)) throw new Error(`${field} '${role}' is not defined; known roles: ${[...this.tools.keys()].sort().join(", ")}`);
  }

  authorize(request: AuthzRequest): AuthzDecision {
    const policy = this.policyFor(request.principal, request.resource);
    if (!policy) return { allow: true, reasons: [{ code: "authz.no_policy", message: "no policy configured" }], policy_id: "rbac:unrestricted" };
    if (permits(policy, request.target)) return { allow: true, reasons: [{ code: "authz.allowed" }], policy_id: "rbac:allow" };
    return {
      allow: false,
      reasons: [{ code: "authz.denied", message: `role '${request.principal.role}' is denied '${request.target}' on resource '${request.resource}'` }],
      policy_id: "rbac:deny",
    };
  }

  filterResources(principal: AuthzPrincipal, resourceType: string, candidates: string[]): string[] {
    const policy = this.policyFor(principal, resourceType);
    return policy ? candidates.filter((c) => permits(policy, c)) : [...candidates];
  }

  referencedTools(): string[] {
    const names = new Set<string>();
    for (const policy of this.tools.values()) {
      if (!policy) continue;
      if (policy.allowed !== ALL) for (const n of policy.allowed) names.add(n);
      for (const n of policy.denied) names.add(n);
    }
    return [...names];
  }

  private policyFor(principal: AuthzPrincipal, resource: string): Policy | null {
    if (!principal.role) throw new Error("the principal has no role; cannot evaluate the RBAC policy");
    this.validateRole(principal.role);
    return resource === "tool" || resource === "tools" ? (this.tools.get(principal.role) ?? null) : null;
  }
}

/**
 * Presents an {@link AuthorizationProvider} as a guardrail provider (upstream `GuardrailAuthorizationAdapter`), so
 * GuardrailMiddleware enforces tool permissions at call time: resource `tool`, action `call`, the role from the run
 * (`default_role` when it has none). `infrastructureTools` (the build's `tool_search`) are allowed without asking.
 * Provider errors propagate: the middleware's fail-closed handling decides.
 */
export class GuardrailAuthorizationAdapter implements GuardrailProvider {
  readonly name = "authorization";
  constructor(
    private readonly provider: AuthorizationProvider,
    private readonly defaultRole: string,
    private readonly infrastructureTools: ReadonlySet<string> = new Set(),
  ) {}

  async aevaluate(request: GuardrailRequest): Promise<GuardrailDecision> {
    if (this.infrastructureTools.has(request.tool_name)) return { allow: true, reasons: [{ code: "authz.infrastructure_tool" }], policy_id: "authz:infrastructure" };
    return this.provider.authorize({
      principal: { user_id: request.user_id, role: request.user_role || this.defaultRole },
      resource: "tool",
      action: "call",
      target: request.tool_name,
    });
  }
}
