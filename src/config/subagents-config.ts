// Port of DeerFlow config/subagents_config.py (SubagentsAppConfig, SubagentOverrideConfig, CustomSubagentConfig).
import { z } from "zod";
import { TokenBudgetConfigSchema } from "../agents/middlewares/token-budget-options.js";

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

/**
 * `subagents.agents.<name>`: per-type overrides (built-in or custom type). Unknown keys are refused, so a typo
 * such as `timeout: 60` is a config error instead of a silently ignored limit.
 */
export const SubagentOverrideConfigSchema = z.strictObject({
  timeout_seconds: nullish(z.number().int().min(1)),
  max_turns: nullish(z.number().int().min(1)),
  model: nullish(z.string().min(1)),
  skills: nullish(z.array(z.string())),
  token_budget: nullish(TokenBudgetConfigSchema),
});
/** A validated per-type override. */
export type SubagentOverrideConfig = z.infer<typeof SubagentOverrideConfigSchema>;

/** `subagents.custom_agents.<name>`: a user-defined subagent type (DeerFlow `CustomSubagentConfig`). */
export const CustomSubagentConfigSchema = z.strictObject({
  description: z.string().min(1),
  system_prompt: z.string().min(1),
  /** Tool allowlist (null = every tool the parent has). */
  tools: nullish(z.array(z.string())),
  disallowed_tools: z.array(z.string()).nullable().default(["task", "ask_clarification", "present_files"]),
  /** Skill allowlist (null = all enabled skills, [] = none). */
  skills: nullish(z.array(z.string())),
  /** A configured model name, or `inherit` for the parent's model. */
  model: z.string().min(1).default("inherit"),
  max_turns: z.number().int().min(1).default(50),
  timeout_seconds: z.number().int().min(1).default(900),
});
/** A validated custom subagent type. */
export type CustomSubagentConfig = z.infer<typeof CustomSubagentConfigSchema>;

/**
 * `subagents`: the `task` tool's types and limits (DeerFlow `SubagentsAppConfig`). `timeout_seconds` (1800) and
 * `max_turns` are the defaults of the built-in types; custom types keep their own unless `agents.<name>` overrides
 * them. `max_concurrent` (1..4, default 3) bounds `task` calls per response, `max_total_per_run` (1..50, default
 * 6) per run. Unknown keys are refused with the key's path in the error.
 */
export const SubagentsConfigSchema = z.strictObject({
  timeout_seconds: z.number().int().min(1).default(1800),
  max_turns: nullish(z.number().int().min(1)),
  max_total_per_run: z.number().int().min(1).max(50).default(6),
  max_concurrent: z.number().int().min(1).max(4).default(3),
  token_budget: nullish(TokenBudgetConfigSchema),
  agents: z.record(z.string().min(1), SubagentOverrideConfigSchema).default({}),
  custom_agents: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, "a custom subagent name may use letters, digits, '-' and '_' only"), CustomSubagentConfigSchema).default({}),
});
/** The validated `subagents` section. */
export type SubagentsConfig = z.infer<typeof SubagentsConfigSchema>;
