// Port of DeerFlow agents/middlewares/skill_tool_policy_middleware.py (SkillToolPolicyMiddleware): a skill's
// `allowed-tools` (SKILL.md front matter) applies while the skill is active.
import { posix } from "node:path";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, isCommand } from "@langchain/langgraph";
import type { ModelRequest, ToolCallHandler } from "langchain";
import { getLogger } from "../../logger.js";
import { skillContainerFile } from "../../skills/load-skills.js";
import type { Skill } from "../../skills/parse-skill.js";
import { resolveSlashSkill } from "../../skills/slash.js";
import { ALWAYS_AVAILABLE_TOOL_NAMES, allowedToolNamesForSkills } from "../../skills/tool-policy.js";
import { DeerflowMiddleware } from "./base.js";
import { textOf } from "./message-utils.js";
import { latestRealUserMessage } from "./skill-activation.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];

/** Options of {@link SkillToolPolicyMiddleware}: the same skills, allowlist and container root as SkillActivation. */
export interface SkillToolPolicyOptions {
  skills: readonly Skill[];
  allowlist?: ReadonlySet<string> | null;
  containerPath?: string;
}

/** True when some usable skill of `options` declares `allowed-tools` (else the policy can never restrict anything). */
export function skillPolicyNeeded(options: SkillToolPolicyOptions): boolean {
  return options.skills.some((s) => s.allowedTools !== null && s.enabled && (!options.allowlist || options.allowlist.has(s.name)));
}

const toolNameOf = (t: unknown): string | undefined => {
  const o = t as { name?: unknown; function?: { name?: unknown } };
  return typeof o?.name === "string" ? o.name : typeof o?.function?.name === "string" ? o.function.name : undefined;
};

/**
 * Restricts the agent's tools to the `allowed-tools` of the active skills. A skill is active when the turn started
 * with `/skill-name` (that skill alone, for the whole turn: reading another skill cannot widen it), else when the
 * conversation holds a successful `read_file` of its SKILL.md (or a `skill_context` entry for it). Several active
 * skills allow the union of their lists; when none declares the key, everything is allowed. `read_file`,
 * `describe_skill`, `review_skill_package` and `tool_search` always stay. An active reference to a disabled skill,
 * or one outside the agent's allowlist, counts for nothing; when no reference is usable the policy fails closed
 * (only those four tools).
 *
 * wrapModelCall removes the other tools from the request; wrapToolCall answers a call to one with
 * "Error: Tool '<name>' is not allowed by the active skill policy." (status error, the tool does not run), and
 * removes disallowed tools from a `tool_search` result (its schemas and its promotion).
 */
export class SkillToolPolicyMiddleware extends DeerflowMiddleware {
  readonly name = "SkillToolPolicyMiddleware";
  private readonly byName: Map<string, Skill>;
  private readonly byPath: Map<string, Skill>;
  private readonly allowlist: ReadonlySet<string> | null;

  constructor(options: SkillToolPolicyOptions) {
    super();
    const root = options.containerPath ?? "/mnt/skills";
    this.byName = new Map(options.skills.map((s) => [s.name, s]));
    this.byPath = new Map(options.skills.map((s) => [posix.normalize(skillContainerFile(s, root)), s]));
    this.allowlist = options.allowlist ?? null;
  }

  private usable(skill: Skill | undefined): skill is Skill {
    return Boolean(skill && skill.enabled && (!this.allowlist || this.allowlist.has(skill.name)));
  }

  /** The tool names allowed now (always-available ones included), or null for no restriction. */
  allowedNames(messages: readonly BaseMessage[], skillContext?: unknown): Set<string> | null {
    const target = latestRealUserMessage(messages);
    if (target) {
      const original = target.additional_kwargs?.original_user_content;
      const ref = resolveSlashSkill(typeof original === "string" ? original : textOf(target));
      const slash = ref ? this.byName.get(ref.name) : undefined;
      if (this.usable(slash)) return withAlwaysAvailable(allowedToolNamesForSkills([slash]));
    }
    const loaded = this.loadedSkillPaths(messages, skillContext);
    if (!loaded.size) return null;
    const active = [...new Set([...loaded].map((p) => this.byPath.get(p)))].filter((s): s is Skill => this.usable(s));
    if (!active.length) {
      getLogger().warn({ paths: [...loaded] }, "no active skill reference could be authorized for allowed-tools; failing closed");
      return new Set(ALWAYS_AVAILABLE_TOOL_NAMES);
    }
    return withAlwaysAvailable(allowedToolNamesForSkills(active));
  }

  /** SKILL.md paths of known skills read successfully in the conversation, plus `skill_context` entries. */
  private loadedSkillPaths(messages: readonly BaseMessage[], skillContext: unknown): Set<string> {
    const paths = new Set<string>();
    if (Array.isArray(skillContext)) {
      for (const e of skillContext) if (typeof e?.path === "string" && this.byPath.has(posix.normalize(e.path))) paths.add(posix.normalize(e.path));
    }
    const reads = new Map<string, string>();
    for (const m of messages) {
      if (AIMessage.isInstance(m)) {
        for (const call of m.tool_calls ?? []) {
          const path = call.name === "read_file" && typeof call.args?.path === "string" ? posix.normalize(call.args.path) : null;
          if (path && call.id && this.byPath.has(path)) reads.set(call.id, path);
        }
      } else if (ToolMessage.isInstance(m) && reads.has(m.tool_call_id) && m.status !== "error" && !textOf(m).startsWith("Error:")) {
        paths.add(reads.get(m.tool_call_id)!);
      }
    }
    return paths;
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const allowed = this.allowedNames(request.messages, (request.state as { skill_context?: unknown } | undefined)?.skill_context);
    if (!allowed) return handler(request) as never;
    const tools = (request.tools ?? []).filter((t) => allowed.has(toolNameOf(t) ?? ""));
    return handler({ ...request, tools }) as never;
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const state = request.state as { messages?: BaseMessage[]; skill_context?: unknown } | undefined;
    const allowed = this.allowedNames(state?.messages ?? [], state?.skill_context);
    const name = request.toolCall.name;
    if (!allowed) return handler(request);
    if (!allowed.has(name)) {
      getLogger().info({ tool: name }, "tool call refused by the active skill's allowed-tools");
      return new ToolMessage({ content: `Error: Tool '${name}' is not allowed by the active skill policy.`, tool_call_id: request.toolCall.id ?? "missing_tool_call_id", name, status: "error" });
    }
    const result = await handler(request);
    return name === "tool_search" ? filterToolSearchResult(result, allowed) : result;
  }
}

function withAlwaysAvailable(allowed: Set<string> | null): Set<string> | null {
  if (!allowed) return null;
  for (const n of ALWAYS_AVAILABLE_TOOL_NAMES) allowed.add(n);
  return allowed;
}

/** A `tool_search` result with the schemas and promotions of disallowed tools removed. */
function filterToolSearchResult<R>(result: R, allowed: ReadonlySet<string>): R {
  if (!isCommand(result) || !result.update || typeof result.update !== "object" || Array.isArray(result.update)) return result;
  const update = result.update as { promoted?: { catalog_hash: string; names: string[] }; messages?: unknown[] };
  if (!update.promoted || update.promoted.names.every((n) => allowed.has(n))) return result;
  const names = update.promoted.names.filter((n) => allowed.has(n));
  const messages = (update.messages ?? []).map((m) => {
    if (!ToolMessage.isInstance(m) || typeof m.content !== "string") return m;
    let schemas: unknown;
    try {
      schemas = JSON.parse(m.content);
    } catch {
      return m;
    }
    const kept = Array.isArray(schemas) ? schemas.filter((s) => allowed.has(toolNameOf(s) ?? "")) : [];
    const content = kept.length ? JSON.stringify(kept) : "No tools found matching the active skill policy.";
    return new ToolMessage({ content, tool_call_id: m.tool_call_id, name: m.name, status: m.status });
  });
  return new Command({ graph: result.graph, goto: result.goto, resume: result.resume, update: { ...update, promoted: { ...update.promoted, names }, messages } }) as R;
}
