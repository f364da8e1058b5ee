// Port of DeerFlow tools/builtins/setup_agent_tool.py (setup_agent): the bootstrap run's way to save a new agent.
import path from "node:path";
import { mkdirSync } from "node:fs";
import { ToolMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import { tool } from "langchain";
import { z } from "zod";
import { validateAgentName } from "../../config/agent-config.js";
import { MAX_SOUL_CHARS, type AgentStore } from "../../config/agent-store.js";
import { atomicWriteFile } from "../../config/atomic-write.js";
import { DeerflowError } from "../../errors.js";
import { toolCallIdOf } from "./write-todos.js";
import { runContextOf } from "../../agents/run-context.js";

/** Arguments of `setup_agent`. */
export const SetupAgentSchema = z.object({
  soul: z.string().max(MAX_SOUL_CHARS).describe("The complete SOUL.md: who the agent is, how it works, what it values"),
  description: z.string().describe("One line describing what the agent is for"),
  skills: z.array(z.string()).nullable().optional().describe("Skill names the agent may use; omit for all skills, [] for none"),
});

/** Options of {@link createSetupAgentTool}. */
export interface SetupAgentToolOptions {
  /** Where agents are written. */
  store: AgentStore;
  /** Agents directory: the default agent's SOUL.md goes to `<agentsDir>/SOUL.md` when the run names no agent. */
  agentsDir: string;
  /** Names of the installed skills; `skills` naming another one is refused. */
  knownSkills: readonly string[];
}

type ToolConfig = { context?: Record<string, unknown>; configurable?: Record<string, unknown> };

/** The names in `skills` that are not installed. */
export function unknownSkills(skills: readonly string[] | null | undefined, known: readonly string[]): string[] {
  return (skills ?? []).filter((s) => !known.includes(s));
}

/** The refusal of setup_agent / update_agent while `agents_api.enabled` is false. */
export const AGENT_WRITES_DISABLED =
  "Error: agent definitions cannot be changed here: the operator has disabled agent management (agents_api.enabled is false in config.yaml).";

/**
 * True when the run's AppConfig (installed in the context by the gateway) has `agents_api.enabled: false`: the
 * switch that closes the agents HTTP API also closes the tools that write agent files and the default SOUL.md.
 */
export function agentWritesDisabled(cfg: ToolConfig): boolean {
  return runContextOf(cfg).appConfig?.agents_api?.enabled === false;
}

/**
 * Creates `setup_agent`, the tool of a bootstrap run (`is_bootstrap`). With an `agent_name` in the run context it
 * creates that agent for the context's user, or updates it when it exists: config.yaml `{name, description,
 * skills?}` and SOUL.md, each written atomically through the agent store; it answers "Agent '<name>' created
 * successfully!" and sets `created_agent_name` in the thread state. Without an agent name it saves the default
 * agent's SOUL.md. Refused without writing (status `error`): `agents_api.enabled: false` in the run's config, a blank soul ("Error: soul content is empty; ..."), an
 * invalid agent name ("Error: Invalid agent name ..."), a skill that is not installed ("Error: Unknown skill ...").
 */
export function createSetupAgentTool(options: SetupAgentToolOptions) {
  return tool(
    async ({ soul, description, skills }, config) => {
      const id = toolCallIdOf(config);
      const error = (content: string) => new ToolMessage({ content, tool_call_id: id, name: "setup_agent", status: "error" });
      if (!soul.trim()) return error("Error: soul content is empty; write the complete SOUL.md text and call setup_agent again.");
      const cfg = (config ?? {}) as ToolConfig;
      if (agentWritesDisabled(cfg)) return error(AGENT_WRITES_DISABLED);
      const rawName = runContextOf(cfg).agentName;
      const { userId } = runContextOf(cfg);
      const unknown = unknownSkills(skills, options.knownSkills);
      if (unknown.length) {
        return error(`Error: Unknown skill ${unknown.map((s) => `'${s}'`).join(", ")}. Installed skills: ${options.knownSkills.join(", ") || "(none)"}. Omit skills to allow all of them.`);
      }
      if (rawName === undefined || rawName === null || rawName === "") {
        mkdirSync(options.agentsDir, { recursive: true });
        atomicWriteFile(path.join(options.agentsDir, "SOUL.md"), soul);
        return new ToolMessage({ content: "SOUL.md saved: the default agent uses it from the next run.", tool_call_id: id, name: "setup_agent" });
      }
      let name: string;
      try {
        name = validateAgentName(String(rawName));
      } catch (err) {
        return error(`Error: ${(err as Error).message}`);
      }
      try {
        const fields = { description, soul, ...(skills !== undefined ? { skills } : {}) };
        let exists = true;
        try {
          options.store.get(name, userId);
        } catch (err) {
          if (!DeerflowError.isInstance(err) || err.code !== "not_found") throw err;
          exists = false;
        }
        if (exists) await options.store.update(name, fields, userId);
        else await options.store.create({ name, ...fields }, userId);
      } catch (err) {
        return error(`Error: agent '${name}' could not be saved: ${(err as Error).message}`);
      }
      return new Command({
        update: {
          created_agent_name: name,
          messages: [new ToolMessage({ content: `Agent '${name}' created successfully!`, tool_call_id: id, name: "setup_agent" })],
        },
      });
    },
    {
      name: "setup_agent",
      description:
        "Save the custom agent designed in this conversation: its SOUL.md (identity, style, values), a one-line description " +
        "and optionally the skills it may use. Call it once the user has confirmed the design.",
      schema: SetupAgentSchema,
    },
  );
}
