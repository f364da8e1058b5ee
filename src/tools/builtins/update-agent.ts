// Port of DeerFlow tools/builtins/update_agent_tool.py (update_agent): a custom agent rewrites its own definition.
import { ToolMessage } from "@langchain/core/messages";
import { tool } from "langchain";
import { z } from "zod";
import { validateAgentName } from "../../config/agent-config.js";
import { MAX_SOUL_CHARS, type AgentRecord, type AgentStore, type AgentUpdate } from "../../config/agent-store.js";
import { getModelConfig, type AppConfig } from "../../config/schema.js";
import { DeerflowError } from "../../errors.js";
import { AGENT_WRITES_DISABLED, agentWritesDisabled, unknownSkills } from "./setup-agent.js";
import { toolCallIdOf } from "./write-todos.js";
import { runContextOf } from "../../agents/run-context.js";

/** Channels whose agents are operator-configured: `update_agent` refuses to run there. */
export const WEBHOOK_CHANNELS: ReadonlySet<string> = new Set(["github"]);

const listOrString = z.union([z.array(z.string()), z.string()]).nullable().optional();

/** Arguments of `update_agent`; every field optional. */
export const UpdateAgentSchema = z.object({
  soul: z.string().max(MAX_SOUL_CHARS).nullable().optional().describe("The complete new SOUL.md (replaces the current one); omit to keep it"),
  description: z.string().nullable().optional().describe("New one-line description; omit to keep it"),
  skills: listOrString.describe("Skill names allowed (a JSON array); [] disables all skills; omit to keep"),
  tool_groups: listOrString.describe("Tool groups allowed (a JSON array); omit to keep"),
  model: z.string().nullable().optional().describe("Configured model name to use; omit to keep"),
});

/** Options of {@link createUpdateAgentTool}. */
export interface UpdateAgentToolOptions {
  store: AgentStore;
  /** The config models are checked against. */
  appConfig: AppConfig;
  /** Names of the installed skills; `skills` naming another one is refused. */
  knownSkills: readonly string[];
}

const OMITTED = new Set(["null", "none", "undefined"]);
const omitted = (v: unknown) => v === undefined || v === null || (typeof v === "string" && OMITTED.has(v.trim().toLowerCase()));
type ToolConfig = { context?: Record<string, unknown>; configurable?: Record<string, unknown> };

/**
 * Creates `update_agent`, given to a custom agent (not on webhook channels). Fields the model leaves out, or
 * passes as "null" / "none" / "undefined", are kept. Checks in order, each an error result (status `error`) that
 * writes nothing: `agents_api.enabled: false`; webhook channel (`github`) -> "operator-trusted"; no field -> "No fields provided ..."; blank soul
 * -> "soul content is empty ... Omit the soul field ..."; a list field that is not an array; no or an invalid agent
 * name in the run context -> "only available inside a custom agent's chat" / "Invalid agent name"; unknown model ->
 * "Unknown model '<m>' ..."; unknown skill -> "Unknown skill ..."; missing agent -> "... does not exist for the
 * current user ...". Writes go through the agent store (atomic, non-managed keys kept, `skills=[]` kept): config.yaml
 * only when a managed field changes, SOUL.md only when given and different. Unchanged input answers "No changes
 * applied ..."; success "Agent '<n>' updated successfully. Changed: <fields>. ...".
 */
export function createUpdateAgentTool(options: UpdateAgentToolOptions) {
  return tool(
    async (args, config) => {
      const id = toolCallIdOf(config);
      const error = (content: string) => new ToolMessage({ content, tool_call_id: id, name: "update_agent", status: "error" });
      const cfg = (config ?? {}) as ToolConfig;
      if (agentWritesDisabled(cfg) || options.appConfig.agents_api.enabled === false) return error(AGENT_WRITES_DISABLED);
      const channel = cfg.context?.channel_name ?? cfg.configurable?.channel_name;
      if (typeof channel === "string" && WEBHOOK_CHANNELS.has(channel)) {
        return error(`Error: update_agent is disabled on the '${channel}' channel: agents there are operator-trusted and can only be changed by an operator.`);
      }
      const given = Object.fromEntries(Object.entries(args).filter(([, v]) => !omitted(v))) as Record<string, unknown>;
      if (!Object.keys(given).length) return error("Error: No fields provided. Pass at least one of soul, description, skills, tool_groups, model.");
      if (typeof given.soul === "string" && !given.soul.trim()) {
        return error("Error: soul content is empty. Send the complete SOUL.md text, or Omit the soul field to keep the current soul.");
      }
      for (const key of ["skills", "tool_groups"]) {
        if (key in given && !Array.isArray(given[key])) return error(`Error: ${key} must be a JSON array of strings, e.g. ["a", "b"] (got ${JSON.stringify(given[key])}).`);
      }
      const rawName = runContextOf(cfg).agentName;
      if (rawName === undefined || rawName === null || rawName === "") return error("Error: update_agent is only available inside a custom agent's chat (no agent_name in this run).");
      let name: string;
      try {
        name = validateAgentName(String(rawName));
      } catch (err) {
        return error(`Error: ${(err as Error).message}`);
      }
      if (typeof given.model === "string" && !getModelConfig(options.appConfig, given.model)) {
        return error(`Error: Unknown model '${given.model}'. Configured models: ${options.appConfig.models.map((m) => m.name).join(", ")}.`);
      }
      const unknown = unknownSkills(given.skills as string[] | undefined, options.knownSkills);
      if (unknown.length) return error(`Error: Unknown skill ${unknown.map((s) => `'${s}'`).join(", ")}. Installed skills: ${options.knownSkills.join(", ") || "(none)"}.`);
      const { userId } = runContextOf(cfg);
      let current: AgentRecord;
      try {
        current = options.store.get(name, userId);
      } catch (err) {
        if (DeerflowError.isInstance(err) && err.code === "not_found") return error(`Error: agent '${name}' does not exist for the current user; nothing was updated.`);
        return error(`Error: agent '${name}' cannot be read: ${(err as Error).message}`);
      }
      const patch: AgentUpdate = {};
      const changed: string[] = [];
      for (const key of ["description", "skills", "tool_groups", "model", "soul"] as const) {
        if (!(key in given)) continue;
        if (JSON.stringify(given[key]) === JSON.stringify(current[key])) continue;
        (patch as Record<string, unknown>)[key] = given[key];
        changed.push(key);
      }
      if (!changed.length) return new ToolMessage({ content: `No changes applied: agent '${name}' already has these values.`, tool_call_id: id, name: "update_agent" });
      try {
        await options.store.update(name, patch, userId);
      } catch (err) {
        return error(`Error: agent '${name}' could not be updated: ${(err as Error).message}`);
      }
      return new ToolMessage({
        content: `Agent '${name}' updated successfully. Changed: ${changed.join(", ")}. The changes apply from the next message.`,
        tool_call_id: id,
        name: "update_agent",
      });
    },
    {
      name: "update_agent",
      description:
        "Update your own definition as this custom agent: SOUL.md, description, allowed skills, tool groups or model. " +
        "Pass only the fields that change; omit the others (never pass the string \"null\").",
      schema: UpdateAgentSchema,
    },
  );
}
