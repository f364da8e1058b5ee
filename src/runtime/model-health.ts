// Health of the configured models: a `use:` that cannot be resolved fails every run on that model, and a
// fallback that names no configured model never helps, so both are reported by GET /health.
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { getProjectRoot } from "../config/paths.js";
import type { AppConfig } from "../config/schema.js";
import { resolveClass } from "../models/resolve-use.js";

/** A configured model that cannot serve runs as configured. */
export interface ModelProblem {
  /** The entry's `name`. */
  model: string;
  /** What is wrong, for the operator (no secrets: entries' keys and URLs are never included). */
  error: string;
}

const checked = new WeakMap<AppConfig, Promise<ModelProblem[]>>();

/**
 * Checks every model entry of `appConfig`: its `use:` resolves to a chat model class (dynamic import, cached per
 * config object, so a config is checked once and an edit is checked again), and each of its `fallbacks` names a
 * configured model. Never throws.
 * @returns the problems found, in config order (empty when all is well).
 */
export function checkModels(appConfig: AppConfig): Promise<ModelProblem[]> {
  let result = checked.get(appConfig);
  if (!result) {
    result = (async () => {
      const problems: ModelProblem[] = [];
      const names = new Set(appConfig.models.map((m) => m.name));
      for (const entry of appConfig.models) {
        try {
          await resolveClass(entry.use, BaseChatModel, getProjectRoot());
        } catch (err) {
          problems.push({ model: entry.name, error: (err as Error).message });
        }
        for (const fallback of entry.fallbacks ?? []) {
          if (!names.has(fallback)) problems.push({ model: entry.name, error: `fallback '${fallback}' is not a configured model` });
        }
      }
      return problems;
    })();
    checked.set(appConfig, result);
  }
  return result;
}
