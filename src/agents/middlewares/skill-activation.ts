// Port of DeerFlow agents/middlewares/skill_activation_middleware.py (SkillActivationMiddleware) over skills/slash.py.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { skillContainerFile } from "../../skills/load-skills.js";
import type { Skill } from "../../skills/parse-skill.js";
import { resolveSlashSkill } from "../../skills/slash.js";
import { escapePromptText } from "../prompt-text.js";
import { DeerflowMiddleware } from "./base.js";
import { hiddenHumanMessage, textOf } from "./message-utils.js";
import { recordMiddlewareEvent } from "../run-journal-sink.js";

/** Largest SKILL.md activated by slash, in bytes (a bigger file "could not be loaded safely"). */
export const MAX_SLASH_SKILL_BYTES = 256 * 1024;

/** Options of {@link SkillActivationMiddleware}. */
export interface SkillActivationOptions {
  /** Every discovered skill, enabled and disabled (so a disabled one gets its own message). */
  skills: readonly Skill[];
  /** The agent's allowlist: null = every enabled skill. */
  allowlist?: ReadonlySet<string> | null;
  /** Container root of the skills (`skills.container_path`). */
  containerPath?: string;
}

/** The result of resolving a slash reference: the activation message, or the answer explaining the failure. */
export type SlashActivation = { activation: HumanMessage; audit: SkillActivationAudit } | { failure: string } | null;

/** What a slash activation records in the run journal (`middleware:skill_activation`, upstream's `changes`). */
export interface SkillActivationAudit {
  skill_name: string;
  category: string;
  /** The SKILL.md path inside the sandbox. */
  path: string;
  /** SHA-256 (hex) of the SKILL.md content activated. */
  content_hash: string;
}

/** The latest user-typed message: a HumanMessage not hidden from the UI and not a summary. */
export function latestRealUserMessage(messages: readonly BaseMessage[]): BaseMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (HumanMessage.isInstance(m) && m.name !== "summary" && !m.additional_kwargs?.hide_from_ui && !m.additional_kwargs?.dynamic_context_reminder) return m;
  }
  return undefined;
}

/**
 * Activates a skill named at the start of a turn: when the latest user message (its text before upload notes were
 * added) starts with `/skill-name` (lowercase hyphen-case, then whitespace or the end; `/help`, `/new` and the other
 * reserved commands are ignored), a hidden HumanMessage (id `<target>__slash_activation`, flags `hide_from_ui`,
 * `slash_skill_activation`, `target_message_id`) is inserted just before it, holding `<slash_skill_activation>`
 * with `<user_request>` (the escaped remaining text, or a request to ask what to do) and the skill's SKILL.md
 * (`<skill name category path sha256 editable>` around `<skill_content encoding="xml-escaped">`). It is
 * request-only and repeated on every model call of that turn, so the instructions stay in view across tool
 * rounds. When the skill cannot be used, the model is not called and the turn is answered with "Skill `/x` is not
 * installed." / "... is installed but disabled. Enable it before using slash activation." / "... is not
 * available for this agent." / "... could not be loaded safely. ...". Hook: wrapModelCall.
 */
export class SkillActivationMiddleware extends DeerflowMiddleware {
  readonly name = "SkillActivationMiddleware";
  private readonly skills: Map<string, Skill>;
  private readonly allowlist: ReadonlySet<string> | null;
  private readonly containerPath: string;

  constructor(options: SkillActivationOptions) {
    super();
    this.skills = new Map(options.skills.map((s) => [s.name, s]));
    this.allowlist = options.allowlist ?? null;
    this.containerPath = options.containerPath ?? "/mnt/skills";
  }

  /** Resolves the slash reference of `target` (null when the message does not start with one). */
  resolve(target: BaseMessage): SlashActivation {
    const original = target.additional_kwargs?.original_user_content;
    const ref = resolveSlashSkill(typeof original === "string" ? original : textOf(target));
    if (!ref) return null;
    const label = `Skill \`/${ref.name}\``;
    const skill = this.skills.get(ref.name);
    if (!skill) return { failure: `${label} is not installed.` };
    if (!skill.enabled) return { failure: `${label} is installed but disabled. Enable it before using slash activation.` };
    if (this.allowlist && !this.allowlist.has(skill.name)) return { failure: `${label} is not available for this agent.` };
    let content: string;
    try {
      const raw = readFileSync(skill.file);
      if (raw.length > MAX_SLASH_SKILL_BYTES) throw new Error(`SKILL.md is larger than ${MAX_SLASH_SKILL_BYTES} bytes`);
      content = raw.toString("utf8");
    } catch (err) {
      getLogger().warn({ skill: skill.name, err: (err as Error).message }, "slash skill activation failed");
      return { failure: `${label} could not be loaded safely. ${(err as Error).message.replace(/\/[^\s]+/g, "<path>")}.` };
    }
    const sha = createHash("sha256").update(content).digest("hex");
    const attr = (v: string) => escapePromptText(v).replace(/"/g, "&quot;");
    const request = ref.rest ? escapePromptText(ref.rest) : "(no request text: ask the user what they want done with this skill)";
    const body = [
      "<slash_skill_activation>",
      `The user activated the skill \`${attr(skill.name)}\` with a slash command. Follow its instructions for this request.`,
      `<user_request>\n${request}\n</user_request>`,
      `<skill name="${attr(skill.name)}" category="${attr(skill.category)}" path="${attr(skillContainerFile(skill, this.containerPath))}" sha256="${sha}" editable="${skill.category === "custom"}">`,
      `<skill_content encoding="xml-escaped">\n${escapePromptText(content)}\n</skill_content>`,
      "</skill>",
      "</slash_skill_activation>",
    ].join("\n");
    const activation = hiddenHumanMessage(body, "slash_skill_activation", { slash_skill_activation: true, target_message_id: target.id ?? null });
    activation.id = `${target.id ?? "message"}__slash_activation`;
    return { activation, audit: { skill_name: skill.name, category: skill.category, path: skillContainerFile(skill, this.containerPath), content_hash: sha } };
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const target = latestRealUserMessage(request.messages);
    if (!target) return handler(request) as never;
    const already = request.messages.some((m) => m.additional_kwargs?.slash_skill_activation && m.additional_kwargs?.target_message_id === (target.id ?? null));
    if (already) return handler(request) as never;
    const resolved = this.resolve(target);
    if (!resolved) return handler(request) as never;
    if ("failure" in resolved) return new AIMessage({ content: resolved.failure }) as never;
    recordMiddlewareEvent(request.runtime, "skill_activation", { name: "SkillActivationMiddleware", hook: "wrap_model_call", action: "activate", changes: { ...resolved.audit } });
    const at = request.messages.indexOf(target);
    return handler({ ...request, messages: [...request.messages.slice(0, at), resolved.activation, ...request.messages.slice(at)] }) as never;
  }
}
