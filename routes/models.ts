// GET /api/models and /api/models/:name (DeerFlow gateway routers/models.py). Never shows keys or base URLs.
import type { FastifyInstance } from "fastify";
import { envSourcedFields } from "../src/config/app-config.js";
import type { ModelConfig } from "../src/config/schema.js";
import { NotFoundError } from "../src/errors.js";
import { doc } from "./openapi.js";

/**
 * The public view of a model entry: descriptive fields only; `model` is null when the config filled it from an
 * environment variable (no response carries a value taken from the environment).
 */
export function publicModel(m: ModelConfig) {
  const fromEnv = envSourcedFields(m);
  return {
    name: m.name,
    model: fromEnv.has("model") ? null : m.model,
    display_name: m.display_name ?? null,
    description: m.description ?? null,
    supports_thinking: m.supports_thinking,
    supports_reasoning_effort: m.supports_reasoning_effort,
  };
}

/** Registers the model routes (mounted under `/api`). */
export async function modelRoutes(app: FastifyInstance): Promise<void> {
  app.get("/models", { schema: doc("models", "Configured models (no keys, no URLs)") }, async () => {
    const config = app.deerflow.getAppConfig();
    return { models: config.models.map(publicModel), token_usage: { enabled: Boolean(config.token_usage.enabled) } };
  });
  app.get<{ Params: { name: string } }>("/models/:name", { schema: doc("models", "One configured model") }, async (request) => {
    const model = app.deerflow.getAppConfig().models.find((m) => m.name === request.params.name);
    if (!model) throw new NotFoundError(`Model '${request.params.name}' not found`);
    return publicModel(model);
  });
}
