// Port of DeerFlow config/extensions_config.py: MCP servers, skill enabled states and extension middlewares,
// from `extensions_config.json`. Read from disk on every agent build (it changes independently of config.yaml).
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { ConfigError } from "../errors.js";
import { getProjectRoot } from "./paths.js";

/** Routing hints of an MCP server or tool; unknown keys rejected, priority clamped into 0..100. */
export const McpRoutingSchema = z.strictObject({
  mode: z.enum(["off", "prefer"]).default("off"),
  priority: z.number().default(0).transform((p) => Math.min(100, Math.max(0, p))),
  keywords: z.array(z.string()).default([]),
});

/** A per-tool routing override (`tools.<name>.routing`): only the keys it sets replace the server's (no defaults). */
export const McpRoutingOverrideSchema = z.strictObject({
  mode: z.enum(["off", "prefer"]).optional(),
  priority: z.number().transform((p) => Math.min(100, Math.max(0, p))).optional(),
  keywords: z.array(z.string()).optional(),
});

/**
 * OAuth for an http/sse MCP server (upstream `McpOAuthConfig`): the gateway fetches an access token from `token_url`
 * (RFC 6749 client credentials or refresh token grant, form-encoded), caches it and refreshes it
 * `refresh_skew_seconds` before expiry. The `*_field` keys name the fields of a non-standard token response.
 */
export const McpOAuthConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
  token_url: z.string().min(1),
  grant_type: z.enum(["client_credentials", "refresh_token"]).default("client_credentials"),
  client_id: z.string().nullish(),
  client_secret: z.string().nullish(),
  refresh_token: z.string().nullish(),
  scope: z.string().nullish(),
  audience: z.string().nullish(),
  token_field: z.string().default("access_token"),
  token_type_field: z.string().default("token_type"),
  expires_in_field: z.string().default("expires_in"),
  default_token_type: z.string().default("Bearer"),
  refresh_skew_seconds: z.number().int().default(60),
  extra_token_params: z.record(z.string(), z.string()).default({}),
});
/** A validated OAuth block of an MCP server. */
export type McpOAuthConfig = z.infer<typeof McpOAuthConfigSchema>;

/** One MCP server (`mcpServers.<name>`); unknown keys kept. `transport` is accepted for `type` when `type` is absent. */
export const McpServerConfigSchema = z.preprocess(
  (raw) => {
    if (raw && typeof raw === "object" && !Array.isArray(raw)) {
      const r = raw as Record<string, unknown>;
      if (!r.type && typeof r.transport === "string" && r.transport) return { ...r, type: r.transport };
    }
    return raw;
  },
  z.looseObject({
    enabled: z.boolean().default(true),
    type: z.string().default("stdio"),
    command: z.string().nullish(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    url: z.string().nullish(),
    headers: z.record(z.string(), z.string()).default({}),
    oauth: McpOAuthConfigSchema.nullish(),
    description: z.string().default(""),
    routing: McpRoutingSchema.optional(),
    tools: z.record(z.string(), z.looseObject({ routing: McpRoutingOverrideSchema.optional() })).default({}),
    tool_name_prefix: z.boolean().default(true),
    tool_call_timeout: z.number().positive().nullish(),
    session_init_timeout: z.number().positive().default(60),
    /** Ordinary submit/status/cancel tool groups run as background tasks (`mcp_tasks`); raw (unprefixed) tool names. */
    task_toolsets: z.array(z.strictObject({ name: z.string().trim().min(1).max(255), submit_tool: z.string().min(1), status_tool: z.string().min(1), cancel_tool: z.string().min(1) })).default([]),
  }).superRefine((server, ctx) => {
    // Upstream `_validate_task_tool_bindings`: one raw tool plays one role in one toolset.
    const claimed = new Map<string, string>();
    for (const ts of server.task_toolsets) {
      for (const role of ["submit_tool", "status_tool", "cancel_tool"] as const) {
        const previous = claimed.get(ts[role]);
        if (previous) ctx.addIssue({ code: "custom", path: ["task_toolsets"], message: `MCP task tool '${ts[role]}' must be unique across task_toolsets and roles; it is configured as both ${previous} and ${ts.name}.${role}` });
        claimed.set(ts[role], `${ts.name}.${role}`);
      }
    }
  }),
);
/** A validated MCP server entry. */
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

/** The whole file. `mcp_servers` (snake case) is accepted for `mcpServers`. Unknown top-level keys are kept. */
export const ExtensionsConfigSchema = z.preprocess(
  (raw) => {
    if (raw && typeof raw === "object" && !Array.isArray(raw)) {
      const r = { ...(raw as Record<string, unknown>) };
      if (r.mcpServers === undefined && r.mcp_servers !== undefined) r.mcpServers = r.mcp_servers;
      delete r.mcp_servers;
      return r;
    }
    return raw;
  },
  z.looseObject({
    mcpServers: z.record(z.string(), McpServerConfigSchema).default({}),
    skills: z.record(z.string(), z.looseObject({ enabled: z.boolean().default(true) })).default({}),
    middlewares: z.array(z.string()).default([]),
  }),
);
/** A validated extensions config. */
export type ExtensionsConfig = z.infer<typeof ExtensionsConfigSchema>;

/** The empty config used when no file exists (search mode only). */
export const EMPTY_EXTENSIONS_CONFIG: ExtensionsConfig = { mcpServers: {}, skills: {}, middlewares: [] };

/**
 * Lenient `$VAR` substitution (DeerFlow `resolve_env_variables` for extensions): same detection rule as
 * config.yaml (whole string starting with `$`), but an unset variable becomes `""`, never the literal `$VAR`.
 */
export function substituteEnvLenient(value: unknown, env: NodeJS.ProcessEnv = process.env): unknown {
  if (typeof value === "string") return value.startsWith("$") ? (env[value.slice(1)] ?? "") : value;
  if (Array.isArray(value)) return value.map((v) => substituteEnvLenient(v, env));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteEnvLenient(v, env)]));
  return value;
}

const isFile = (p: string): boolean => {
  try {
    // No exception for a missing file: this runs for each candidate on every agent build.
    return statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false;
  }
};

/**
 * Resolves `extensions_config.json`, first hit wins: 1. `explicitPath` (must exist); 2.
 * `DEER_FLOW_EXTENSIONS_CONFIG_PATH` (must exist, also when it existed earlier and was deleted); 3. project root
 * `extensions_config.json`, then legacy `mcp_config.json`; 4. `config/extensions_config.json` under the project
 * root. Returns null when nothing is found in search mode.
 * @throws ConfigError (`config_not_found`) naming the parameter or the variable.
 */
export function resolveExtensionsConfigPath(explicitPath?: string | null, env: NodeJS.ProcessEnv = process.env): string | null {
  if (explicitPath) {
    const p = path.resolve(explicitPath);
    if (!existsSync(p)) throw new ConfigError(`Extensions config file specified by param \`config_path\` not found at ${p}`, { path: p, code: "config_not_found" });
    return p;
  }
  const fromEnv = env.DEER_FLOW_EXTENSIONS_CONFIG_PATH?.trim();
  if (fromEnv) {
    const p = path.resolve(fromEnv);
    if (!existsSync(p)) {
      throw new ConfigError(`Extensions config file specified by environment variable \`DEER_FLOW_EXTENSIONS_CONFIG_PATH\` not found at ${p}`, { path: p, code: "config_not_found" });
    }
    return p;
  }
  const root = getProjectRoot(env);
  for (const candidate of [path.join(root, "extensions_config.json"), path.join(root, "mcp_config.json"), path.join(root, "config", "extensions_config.json")]) {
    if (isFile(candidate)) return candidate;
  }
  return null;
}

/**
 * Parses the text of an extensions config (lenient `$VAR`s: an unset variable becomes "").
 * @param file Path used in error messages.
 * @throws ConfigError "<file> is not valid JSON: ..." for a syntax error, "Failed to load extensions config from
 *   <file>: <key>: <message>" for a schema error.
 */
export function parseExtensionsConfigText(text: string, file: string, env: NodeJS.ProcessEnv = process.env): ExtensionsConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`Extensions config ${file} is not valid JSON: ${(err as Error).message}`, { path: file, cause: err });
  }
  const parsed = ExtensionsConfigSchema.safeParse(substituteEnvLenient(raw, env));
  if (!parsed.success) {
    throw new ConfigError(`Failed to load extensions config from ${file}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`, { path: file });
  }
  return parsed.data;
}

/** Names of the MCP servers with `enabled: true`. */
export function enabledMcpServers(config: ExtensionsConfig): string[] {
  return Object.entries(config.mcpServers).filter(([, s]) => s.enabled).map(([name]) => name);
}

/**
 * Whether a skill is enabled: its entry's `enabled` when present, else enabled for the `public`, `custom` and
 * `legacy` categories and disabled for any other category (DeerFlow `is_skill_enabled`).
 */
export function isSkillEnabled(config: ExtensionsConfig, name: string, category: string): boolean {
  const entry = config.skills[name];
  if (entry) return entry.enabled;
  return category === "public" || category === "custom" || category === "legacy";
}
