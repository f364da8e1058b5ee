// Port of DeerFlow config/agents_config.py (load side): custom agent definitions on disk.
// Layout (ours, not upstream's users/<uid>/agents/<name>): <agents dir>/<user_id>/<agent_name>/{config.yaml,SOUL.md}.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ConfigError, NotFoundError, ValidationError } from "../errors.js";
import { formatKeyPath } from "./env-substitution.js";
import { readAgentPair } from "./agent-version.js";
import { getAgentsDir } from "./paths.js";

/** DeerFlow's agent-name rule (`agents_config.py:23`). */
export const AGENT_NAME_PATTERN = /^[A-Za-z0-9-]+$/;
/** Longest agent name (DeerFlow's DB column size; also keeps paths under filesystem limits). */
export const MAX_AGENT_NAME_LENGTH = 128;
const USER_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** Per-agent sampling overrides (DeerFlow `AgentModelSettings`): unknown keys rejected, null = inherit. */
export const ModelSettingsSchema = z.strictObject({
  temperature: z.number().min(0).max(2).nullish(),
  max_tokens: z.number().int().min(1).max(200_000).nullish(),
});
/** Allowed `reasoning_effort` values of an agent (`minimal` and others are invalid). */
export const AgentReasoningEffortSchema = z.enum(["low", "medium", "high"]);

/** A custom agent's `config.yaml` (DeerFlow `AgentConfig`). `null` / absent fields mean "do not override". */
export const AgentConfigSchema = z.looseObject({
  name: z.string().optional(),
  description: z.string().nullable().default(""),
  model: z.string().nullable().default(null),
  tool_groups: z.array(z.string()).nullable().default(null),
  skills: z.array(z.string()).nullable().default(null),
  model_settings: ModelSettingsSchema.nullable().default(null),
  thinking_enabled: z.boolean().nullable().default(null),
  reasoning_effort: AgentReasoningEffortSchema.nullable().default(null),
});
/** A validated custom agent definition. */
export type AgentConfig = z.infer<typeof AgentConfigSchema> & { name: string };

/**
 * Validates an agent name against `^[A-Za-z0-9-]+$` (at most 128 characters) and returns it lowercased (names are
 * stored lowercase). @throws ValidationError "Invalid agent name '<x>'. Must match pattern: ^[A-Za-z0-9-]+$", or
 * naming the length limit.
 */
export function validateAgentName(name: string): string {
  if (typeof name !== "string" || !AGENT_NAME_PATTERN.test(name)) {
    throw new ValidationError(`Invalid agent name '${String(name).slice(0, 80)}'. Must match pattern: ${AGENT_NAME_PATTERN.source}`);
  }
  if (name.length > MAX_AGENT_NAME_LENGTH) {
    throw new ValidationError(`Invalid agent name '${name.slice(0, 40)}...': at most ${MAX_AGENT_NAME_LENGTH} characters`);
  }
  return name.toLowerCase();
}

function userDir(userId: string, agentsDir: string): string {
  if (!USER_ID_PATTERN.test(userId)) throw new ValidationError(`Invalid user id '${userId}'`);
  return path.join(agentsDir, userId);
}

/** Directory of one custom agent: `<agents dir>/<user_id>/<lowercased name>`. Validates both ids. */
export function agentDir(name: string, userId = "default", agentsDir = getAgentsDir()): string {
  return path.join(userDir(userId, agentsDir), validateAgentName(name));
}

function readOptional(file: string): string | null {
  try {
    // Missing is common (no SOUL.md): no exception for it on every build.
    if (!statSync(file, { throwIfNoEntry: false })) return null;
    return readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/**
 * Loads `<agents dir>/<user>/<name>/config.yaml`. Mirrors DeerFlow `load_agent_config`.
 * @throws ValidationError for an invalid name. @throws NotFoundError "Agent '<name>' not found" when the
 *   directory has no config.yaml. @throws ConfigError (code `agent_config_invalid`, HTTP 500 with its message) when the file is not valid YAML or
 *   fails the schema.
 */
export function loadAgentConfig(name: string, userId = "default", agentsDir = getAgentsDir()): AgentConfig {
  const dir = agentDir(name, userId, agentsDir);
  const text = readOptional(path.join(dir, "config.yaml"));
  if (text === null) throw new NotFoundError(`Agent '${name.toLowerCase()}' not found`);
  return parseAgentConfig(text, dir, agentsDir);
}

/**
 * A custom agent's config and soul read as one pair: from a single version directory when an update through the
 * API has versioned the agent (see `agent-version.ts`), so a run that overlaps an update sees the old pair or the
 * new one, never one file of each. The soul is trimmed; blank means none.
 * @throws as {@link loadAgentConfig}.
 */
export function loadCustomAgent(name: string, userId = "default", agentsDir = getAgentsDir()): { config: AgentConfig; soul: string | null } {
  const dir = agentDir(name, userId, agentsDir);
  let pair: { config: string; soul: string };
  try {
    pair = readAgentPair(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new NotFoundError(`Agent '${name.toLowerCase()}' not found`);
    throw err;
  }
  return { config: parseAgentConfig(pair.config, dir, agentsDir), soul: pair.soul.trim() || null };
}

function parseAgentConfig(text: string, dir: string, agentsDir: string): AgentConfig {
  const file = path.join(dir, "config.yaml");
  // Shown relative to the store, so messages that reach clients carry no host paths.
  const shown = path.relative(agentsDir, file);
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`Failed to parse agent config ${shown}: ${(err as Error).message.split("\n")[0]}`, { path: file, cause: err, code: "agent_config_invalid" });
  }
  const parsed = AgentConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${formatKeyPath(i.path)}: ${i.message}`).join("; ");
    throw new ConfigError(`Invalid agent config ${shown}: ${issues}`, { path: file, code: "agent_config_invalid" });
  }
  return { ...parsed.data, name: path.basename(dir) };
}

/**
 * The SOUL.md text of an agent (trimmed; blank means none). Without a name: the default agent's soul,
 * `<agents dir>/<user>/SOUL.md`, else the global `<agents dir>/SOUL.md`.
 */
export function loadAgentSoul(name: string | null, userId = "default", agentsDir = getAgentsDir()): string | null {
  const candidates = name
    ? [path.join(agentDir(name, userId, agentsDir), "SOUL.md")]
    : [path.join(userDir(userId, agentsDir), "SOUL.md"), path.join(agentsDir, "SOUL.md")];
  for (const file of candidates) {
    const text = readOptional(file)?.trim();
    if (text) return text;
  }
  return null;
}
