// Port of DeerFlow's file agent store (persistence/agents/file.py) and the write side of agents_config.py:
// custom agents under <agents dir>/<user_id>/<name>/{config.yaml,SOUL.md}.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { z } from "zod";
import { ConfigError, ConflictError, NotFoundError, ValidationError } from "../errors.js";
import { getLogger } from "../logger.js";
import { AgentReasoningEffortSchema, agentDir, loadAgentConfig, ModelSettingsSchema, validateAgentName } from "./agent-config.js";
import { atomicWriteFile, fsyncDir } from "./atomic-write.js";
import { readAgentPair, replaceAgentPair } from "./agent-version.js";
import { isLeftoverAgentDir } from "./leftovers.js";
import { getAgentsDir } from "./paths.js";
import { compareCodePoints } from "../code-point-order.js";


/** Longest SOUL.md an agent (or the user profile) may have, in characters: a soul is a prompt, sent on every run. */
export const MAX_SOUL_CHARS = 64 * 1024;
/** Longest agent description, in characters (it is listed with every agent). */
export const MAX_DESCRIPTION_CHARS = 1024;

/** `POST /api/agents` body. Unknown top-level keys are ignored. Oversized `soul` / `description` are 422. */
export const AgentCreateSchema = z.object({
  name: z.string(),
  description: z.string().max(MAX_DESCRIPTION_CHARS).nullish(),
  model: z.string().nullish(),
  tool_groups: z.array(z.string()).nullish(),
  skills: z.array(z.string()).nullish(),
  model_settings: ModelSettingsSchema.nullish(),
  thinking_enabled: z.boolean().nullish(),
  reasoning_effort: AgentReasoningEffortSchema.nullish(),
  soul: z.string().max(MAX_SOUL_CHARS).nullish(),
});
/** A create request. */
export type AgentCreate = z.infer<typeof AgentCreateSchema>;

/** `PUT /api/agents/{name}` body: every field optional; omitted keeps, explicit null clears (where allowed). */
export const AgentUpdateSchema = AgentCreateSchema.omit({ name: true });
/** An update request. */
export type AgentUpdate = z.infer<typeof AgentUpdateSchema>;

/** The agent as the API returns it (DeerFlow `AgentResponse`): every key present, `soul` always a string. */
export interface AgentRecord {
  name: string;
  description: string;
  model: string | null;
  tool_groups: string[] | null;
  skills: string[] | null;
  model_settings: { temperature: number | null; max_tokens: number | null } | null;
  thinking_enabled: boolean | null;
  reasoning_effort: string | null;
  soul: string;
}

/** Fields the API rewrites; any other key of an agent's config.yaml (e.g. `github`) is carried over verbatim. */
export const MANAGED_FIELDS = ["name", "description", "model", "tool_groups", "skills", "model_settings", "thinking_enabled", "reasoning_effort"] as const;

type Doc = Record<string, unknown>;

/** Prefix of the staging directories of {@link AgentStore.create} (never a valid agent name: it starts with a dot). */
export const STAGING_PREFIX = ".staging-";

/**
 * Refuses a soul over {@link MAX_SOUL_CHARS} or a description over {@link MAX_DESCRIPTION_CHARS} characters, for
 * writers that do not go through {@link AgentCreateSchema} (the agent tools).
 * @throws ValidationError 422 with a `string_too_long` issue naming the field.
 */
function assertTextLimits(input: { soul?: string | null; description?: string | null }): void {
  for (const [field, max] of [["soul", MAX_SOUL_CHARS], ["description", MAX_DESCRIPTION_CHARS]] as const) {
    const value = input[field];
    if (typeof value === "string" && value.length > max) {
      throw new ValidationError(`${field} is too long (${value.length} characters; the limit is ${max})`, [
        { type: "string_too_long", loc: ["body", field], msg: `String should have at most ${max} characters`, ctx: { max_length: max } },
      ]);
    }
  }
}

/** Names a custom agent cannot take: `default` is the default agent's memory bucket and user directory name. */
export const RESERVED_AGENT_NAMES: ReadonlySet<string> = new Set(["default"]);

/** Block-style YAML, insertion order kept, lists at their parent's indentation, no line folding. */
export function dumpAgentYaml(doc: Doc): string {
  return stringifyYaml(doc, { indentSeq: false, lineWidth: 0 });
}

function cleanSettings(settings: Record<string, unknown> | null | undefined): Doc | null {
  if (!settings) return null;
  const out: Doc = {};
  for (const key of ["temperature", "max_tokens"]) if (settings[key] !== null && settings[key] !== undefined) out[key] = settings[key];
  return Object.keys(out).length ? out : null;
}

/**
 * Custom agents on disk for one agents directory. Every write is atomic (temp file + fsync + rename) and writes to
 * one agent are serialized, so concurrent writers never interleave or corrupt its files.
 */
export class AgentStore {
  private readonly locks = new Map<string, Promise<unknown>>();

  /** @param agentsDir Store root (default `DEER_FLOW_AGENTS_DIR` / `agents/`). */
  constructor(private readonly agentsDir: string = getAgentsDir()) {}

  /** Runs `fn` after every earlier write to the same agent has finished. */
  private async serialize<T>(key: string, fn: () => T): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.then(() => undefined, () => undefined);
    this.locks.set(key, settled);
    try {
      return await next;
    } finally {
      if (this.locks.get(key) === settled) this.locks.delete(key);
    }
  }

  private dir(name: string, userId: string): string {
    return agentDir(name, userId, this.agentsDir);
  }

  private readSoul(dir: string): string {
    try {
      return readFileSync(path.join(dir, "SOUL.md"), "utf8");
    } catch {
      return "";
    }
  }

  /** Reads an agent's raw config document (YAML mapping), or null when it has no config.yaml. */
  private readDoc(dir: string): Doc | null {
    const file = path.join(dir, "config.yaml");
    if (!existsSync(file)) return null;
    const shown = path.relative(this.agentsDir, file);
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(file, "utf8")) ?? {};
    } catch (err) {
      throw new ConfigError(`Failed to parse agent config ${shown}: ${(err as Error).message.split("\n")[0]}`, { path: file, code: "agent_config_invalid" });
    }
    if (typeof parsed !== "object" || Array.isArray(parsed)) throw new ConfigError(`Agent config ${shown} is not a mapping`, { path: file, code: "agent_config_invalid" });
    return parsed as Doc;
  }

  /**
   * The agent `name` of `userId` in API shape.
   * @throws ValidationError for a bad name; NotFoundError "Agent '<name>' not found"; ConfigError for a corrupt file.
   */
  get(name: string, userId = "default"): AgentRecord {
    const config = loadAgentConfig(name, userId, this.agentsDir);
    const settings = config.model_settings as { temperature?: number | null; max_tokens?: number | null } | null;
    return {
      name: config.name,
      description: config.description ?? "",
      model: config.model ?? null,
      tool_groups: config.tool_groups ?? null,
      skills: config.skills ?? null,
      model_settings: settings ? { temperature: settings.temperature ?? null, max_tokens: settings.max_tokens ?? null } : null,
      thinking_enabled: config.thinking_enabled ?? null,
      reasoning_effort: config.reasoning_effort ?? null,
      soul: this.readSoul(this.dir(name, userId)),
    };
  }

  /**
   * Every loadable agent of `userId`, sorted by name. Directories without config.yaml are skipped; a corrupt agent
   * is skipped with a warning.
   */
  list(userId = "default"): AgentRecord[] {
    const root = path.dirname(this.dir("x", userId));
    let entries: string[];
    try {
      entries = readdirSync(root);
    } catch {
      return [];
    }
    const out: AgentRecord[] = [];
    for (const entry of entries) {
      const full = path.join(root, entry);
      if (!/^[a-z0-9-]+$/.test(entry) || !statSync(full).isDirectory() || !existsSync(path.join(full, "config.yaml"))) continue;
      try {
        out.push(this.get(entry, userId));
      } catch (err) {
        getLogger().warn({ agent: entry, err: (err as Error).message }, `skipping agent '${entry}': it cannot be loaded`);
      }
    }
    return out.sort((a, b) => compareCodePoints(a.name, b.name));
  }

  /** Whether `name` is free for `userId`: any existing directory of that name (even without config.yaml) takes it. */
  isAvailable(name: string, userId = "default"): boolean {
    return !existsSync(this.dir(name, userId));
  }

  /**
   * Creates an agent: config.yaml with only meaningful keys (`name`, `description` if non-empty, `tool_groups`,
   * `skills`, `model`, `model_settings`, `thinking_enabled`, `reasoning_effort`, each if set) and SOUL.md (the raw
   * soul, even empty). Atomic: both files are written into a staging directory `.staging-<name>-<random>` next to
   * the agents, which is then renamed to the agent's name, so a crash leaves either no agent or a whole one (at
   * worst a staging directory, removed at the next start by {@link sweepAgentLeftovers}).
   * @throws ConflictError "Agent '<name>' already exists"; ValidationError for a reserved name (`default`).
   */
  async create(input: AgentCreate, userId = "default"): Promise<AgentRecord> {
    const name = validateAgentName(input.name);
    assertTextLimits(input);
    if (RESERVED_AGENT_NAMES.has(name)) throw new ValidationError(`Agent name '${name}' is reserved (it names the default agent's memory and soul)`);
    const dir = this.dir(name, userId);
    return this.serialize(dir, () => {
      const root = path.dirname(dir);
      mkdirSync(root, { recursive: true });
      if (existsSync(dir)) throw new ConflictError(`Agent '${name}' already exists`);
      const stage = path.join(root, `${STAGING_PREFIX}${name}-${randomBytes(6).toString("hex")}`);
      mkdirSync(stage);
      try {
        const doc: Doc = { name };
        if (input.description) doc.description = input.description;
        if (input.tool_groups != null) doc.tool_groups = input.tool_groups;
        if (input.skills != null) doc.skills = input.skills;
        if (input.model) doc.model = input.model;
        const settings = cleanSettings(input.model_settings);
        if (settings) doc.model_settings = settings;
        if (input.thinking_enabled != null) doc.thinking_enabled = input.thinking_enabled;
        if (input.reasoning_effort != null) doc.reasoning_effort = input.reasoning_effort;
        atomicWriteFile(path.join(stage, "config.yaml"), dumpAgentYaml(doc));
        atomicWriteFile(path.join(stage, "SOUL.md"), input.soul ?? "");
        // Checked again right before the rename: rename(2) would replace an empty directory of that name.
        if (existsSync(dir)) throw new ConflictError(`Agent '${name}' already exists`);
        try {
          renameSync(stage, dir);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "ENOTEMPTY" || code === "EEXIST") throw new ConflictError(`Agent '${name}' already exists`);
          throw err;
        }
        fsyncDir(root);
      } catch (err) {
        rmSync(stage, { recursive: true, force: true });
        throw err;
      }
      return this.get(name, userId);
    });
  }

  /**
   * Partially updates an agent (DeerFlow `PUT /api/agents/{name}`): omitted keys are kept; for `model`,
   * `tool_groups`, `skills`, `thinking_enabled`, `reasoning_effort` an explicit null removes the key; a null
   * `description` means `""`; `model_settings` merges per sub-field (null clears one). Non-managed keys are kept.
   * `soul` replaces SOUL.md. The two files are replaced as one atomic change ({@link replaceAgentPair}): a crash
   * mid-update leaves the old pair or the new one. @throws NotFoundError for an unknown agent; ValidationError for a blank soul
   * (the old soul is kept; upstream only guards the tool path).
   */
  async update(name: string, patch: AgentUpdate, userId = "default"): Promise<AgentRecord> {
    const lower = validateAgentName(name);
    assertTextLimits(patch);
    const dir = this.dir(lower, userId);
    if (patch.soul !== undefined && patch.soul !== null && !patch.soul.trim()) {
      throw new ValidationError("soul must not be empty; send the full SOUL.md text, or omit soul to keep the current one");
    }
    return this.serialize(dir, () => {
      const existing = this.readDoc(dir);
      if (!existing) throw new NotFoundError(`Agent '${lower}' not found`);
      const has = (k: keyof AgentUpdate) => Object.prototype.hasOwnProperty.call(patch, k);
      let config: string | undefined;
      const configKeys: (keyof AgentUpdate)[] = ["description", "tool_groups", "skills", "model", "model_settings", "thinking_enabled", "reasoning_effort"];
      if (configKeys.some(has)) {
        const pick = (k: keyof AgentUpdate) => (has(k) ? patch[k] : existing[k]);
        // The name is the directory's, whatever a hand edit left in config.yaml (upstream update_agent forces it).
        const doc: Doc = { name: lower, description: has("description") ? (patch.description ?? "") : (existing.description ?? "") };
        for (const k of ["tool_groups", "skills", "model"] as const) {
          const v = pick(k);
          if (v !== null && v !== undefined && v !== "") doc[k] = v;
        }
        const settings: Doc = { ...(cleanSettings(existing.model_settings as Doc | null) ?? {}) };
        if (has("model_settings")) {
          if (patch.model_settings === null) for (const k of Object.keys(settings)) delete settings[k];
          else for (const [k, v] of Object.entries(patch.model_settings ?? {})) v === null ? delete settings[k] : (settings[k] = v);
        }
        if (Object.keys(settings).length) doc.model_settings = settings;
        for (const k of ["thinking_enabled", "reasoning_effort"] as const) {
          const v = pick(k);
          if (v !== null && v !== undefined) doc[k] = v;
        }
        for (const [k, v] of Object.entries(existing)) if (!(MANAGED_FIELDS as readonly string[]).includes(k)) doc[k] = v;
        config = dumpAgentYaml(doc);
      }
      const soul = patch.soul ?? undefined;
      // Both files change as one: a crash mid-update leaves the old pair or the new one (see replaceAgentPair).
      if (config !== undefined || soul !== undefined) {
        const current = readAgentPair(dir);
        replaceAgentPair(dir, { config: config ?? current.config, soul: soul ?? current.soul });
      }
      return this.get(lower, userId);
    });
  }

  /**
   * Deletes an agent's directory (config, soul, memory).
   * @throws NotFoundError when absent; ConflictError when the directory holds data but no config.yaml
   *   (memory-only data is preserved, DeerFlow #4279).
   */
  async delete(name: string, userId = "default"): Promise<void> {
    const lower = validateAgentName(name);
    const dir = this.dir(lower, userId);
    await this.serialize(dir, () => {
      if (!existsSync(dir)) throw new NotFoundError(`Agent '${lower}' not found`);
      const config = path.join(dir, "config.yaml");
      // A directory left by a crash before this version's atomic create (nothing in it but temp files) just goes.
      if (!existsSync(config) && isLeftoverAgentDir(dir)) {
        rmSync(dir, { recursive: true, force: true });
        return;
      }
      if (!existsSync(config) || !statSync(config).isFile()) {
        throw new ConflictError(`Directory for '${lower}' contains memory data but is not a custom agent; it was preserved`);
      }
      rmSync(dir, { recursive: true, force: true });
    });
  }

  /**
   * Where the profile of `userId` lives: `<agents dir>/USER.md` for the default user (the file upstream calls the
   * global profile, kept where it always was), `<agents dir>/<user_id>/USER.md` for an account.
   */
  private profileFile(userId: string): string {
    return userId === "default" ? path.join(this.agentsDir, "USER.md") : path.join(path.dirname(this.dir("x", userId)), "USER.md");
  }

  /** The user profile of `userId`: trimmed content, or null when missing or blank. */
  readUserProfile(userId = "default"): string | null {
    try {
      return readFileSync(this.profileFile(userId), "utf8").trim() || null;
    } catch {
      return null;
    }
  }

  /**
   * Replaces the user profile of `userId` (atomically); returns the content as sent, or null when empty.
   * @throws ValidationError when it is longer than {@link MAX_SOUL_CHARS}.
   */
  writeUserProfile(content: string, userId = "default"): string | null {
    if (content.length > MAX_SOUL_CHARS) throw new ValidationError(`content is too long (${content.length} characters; the limit is ${MAX_SOUL_CHARS})`, [{ type: "string_too_long", loc: ["body", "content"], msg: `String should have at most ${MAX_SOUL_CHARS} characters`, ctx: { max_length: MAX_SOUL_CHARS } }]);
    const file = this.profileFile(userId);
    mkdirSync(path.dirname(file), { recursive: true });
    atomicWriteFile(file, content);
    return content || null;
  }
}
