// Port of DeerFlow config/skill_evolution_config.py (SkillEvolutionConfig): the switch of the skill_manage tool.
import { z } from "zod";

/**
 * `skill_evolution`: whether the lead agent gets `skill_manage` to create and improve the user's custom skills.
 * Unknown keys are refused (a typo such as `enable: true` would otherwise leave the tool off without a word).
 * `moderation_model_name` and `security_fail_closed` are DeerFlow's LLM moderation settings: accepted so DeerFlow's
 * config loads unchanged, but this gateway runs no moderation model (writes are validated, size-limited, confined to
 * the user's own directory and shown only in that user's prompts).
 */
export const SkillEvolutionConfigSchema = z.strictObject({
  enabled: z.boolean().default(false),
  moderation_model_name: z.string().nullable().optional(),
  security_fail_closed: z.boolean().default(true),
});
/** A validated `skill_evolution` section. */
export type SkillEvolutionConfig = z.infer<typeof SkillEvolutionConfigSchema>;
