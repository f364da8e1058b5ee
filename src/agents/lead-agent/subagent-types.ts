// Port of DeerFlow subagents/registry.py and subagents/builtins/ (general-purpose, bash): which subagent types a
// run offers and the effective limits of each. The prompts are our own wording.
import type { AppConfig } from "../../config/schema.js";
import type { TokenBudgetConfig } from "../middlewares/token-budget.js";
import { isHostBashAllowed } from "../../sandbox/security.js";

/** One subagent type with every config override applied. */
export interface SubagentType {
  name: string;
  /** When the lead agent should delegate to it (the first line is shown in the lead's prompt). */
  description: string;
  /** The child's role text (its `<role>` section). */
  systemPrompt: string;
  /** Tool allowlist (null = every tool the parent offers). */
  tools: string[] | null;
  /** Tools always removed. */
  disallowedTools: string[];
  /** Skill allowlist (null = inherit the parent's, [] = none). */
  skills: string[] | null;
  /** A configured model name, or null to inherit the parent's model. */
  model: string | null;
  /** The child's recursion limit (upstream passes `max_turns` as `recursion_limit`). */
  maxTurns: number;
  /** Wall-clock limit of one task in seconds; past it the child is aborted and the task fails. */
  timeoutSeconds: number;
  /** Token budget of the child run, when configured for subagents (null = the app's `token_budget`). */
  tokenBudget: TokenBudgetConfig | null;
  builtin: boolean;
}

const NO_NESTING = ["task", "ask_clarification", "present_files"];

const WORKDIR = [
  "Your sandbox is the parent's: uploads in `/mnt/user-data/uploads`, scratch files in `/mnt/user-data/workspace`",
  "(the default working directory), deliverables in `/mnt/user-data/outputs`. Prefer paths relative to the workspace.",
].join(" ");

/** DeerFlow's built-in types with their own defaults (before `subagents.*` overrides). */
const BUILTINS: readonly Omit<SubagentType, "timeoutSeconds" | "tokenBudget">[] = [
  {
    name: "general-purpose",
    description:
      "A capable agent for bounded research, analysis or multi-step work that benefits from its own context.\n" +
      "Use it for one independent part of parallel work or an investigation that would crowd the lead's context.",
    systemPrompt:
      "You are a general-purpose subagent working on one delegated task on your own: you cannot ask the user questions and you cannot start further subagents. " +
      "Use the tools you have, act decisively, and finish with a complete, self-contained report: what you did, what you found, the files you produced and any problem you hit. " +
      WORKDIR,
    tools: null,
    disallowedTools: NO_NESTING,
    skills: null,
    model: null,
    maxTurns: 150,
    builtin: true,
  },
  {
    name: "bash",
    description:
      "A command-execution specialist for a bounded shell workflow whose output would crowd the lead's context.\n" +
      "Routine single commands are cheaper with the bash tool directly.",
    systemPrompt:
      "You are a bash subagent: run the requested commands carefully, one at a time when they depend on each other, and report for each what ran, whether it succeeded, " +
      "the relevant output (summarized when long) and any error. Be careful with destructive commands. " +
      WORKDIR,
    tools: ["bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep"],
    disallowedTools: NO_NESTING,
    skills: null,
    model: null,
    maxTurns: 60,
    builtin: true,
  },
];

/**
 * The subagent types a run offers, in upstream's order: `general-purpose`, `bash` (only when host bash is
 * allowed, DeerFlow `get_available_subagent_names`), then `subagents.custom_agents` in file order (a custom type
 * cannot shadow a built-in). Overrides follow DeerFlow `get_subagent_config`: `agents.<name>.timeout_seconds` /
 * `max_turns` win; otherwise the section's `timeout_seconds` / `max_turns` apply to built-ins only; `model` and
 * `skills` come from `agents.<name>` when set; `model: inherit` means the parent's model.
 */
export function getSubagentTypes(appConfig: AppConfig): SubagentType[] {
  const cfg = appConfig.subagents;
  const out: SubagentType[] = [];
  const apply = (base: Omit<SubagentType, "timeoutSeconds" | "tokenBudget">, ownTimeout: number): SubagentType => {
    const o = cfg.agents[base.name];
    const model = o?.model ?? base.model;
    return {
      ...base,
      timeoutSeconds: o?.timeout_seconds ?? (base.builtin ? cfg.timeout_seconds : ownTimeout),
      maxTurns: o?.max_turns ?? (base.builtin ? (cfg.max_turns ?? base.maxTurns) : base.maxTurns),
      model: model && model !== "inherit" ? model : null,
      skills: o?.skills ?? base.skills,
      tokenBudget: o?.token_budget ?? cfg.token_budget ?? null,
    };
  };
  const hostBash = isHostBashAllowed(appConfig);
  for (const b of BUILTINS) if (b.name !== "bash" || hostBash) out.push(apply(b, cfg.timeout_seconds));
  for (const [name, c] of Object.entries(cfg.custom_agents)) {
    if (BUILTINS.some((b) => b.name === name)) continue;
    out.push(
      apply(
        {
          name,
          description: c.description,
          systemPrompt: c.system_prompt,
          tools: c.tools ?? null,
          disallowedTools: c.disallowed_tools ?? [],
          skills: c.skills ?? null,
          model: c.model,
          maxTurns: c.max_turns,
          builtin: false,
        },
        c.timeout_seconds,
      ),
    );
  }
  return out;
}

/** The type named `name` among {@link getSubagentTypes}, or undefined. */
export function getSubagentType(appConfig: AppConfig, name: string): SubagentType | undefined {
  return getSubagentTypes(appConfig).find((t) => t.name === name);
}

/**
 * Keeps the tools a subagent type may use: its allowlist (when set), minus its disallowed tools; `task` is
 * always removed (no nesting). Mirrors DeerFlow `SubagentExecutor` tool filtering.
 */
export function filterSubagentTools<T extends { name: string }>(tools: T[], type: SubagentType): T[] {
  const allow = type.tools ? new Set(type.tools) : null;
  const deny = new Set([...type.disallowedTools, "task"]);
  return tools.filter((t) => (!allow || allow.has(t.name)) && !deny.has(t.name));
}
