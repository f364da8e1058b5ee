// Agents API (DeerFlow gateway routers/agents.py): custom agents and the user profile, under /api.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { validateAgentName } from "../src/config/agent-config.js";
import { AgentCreateSchema, AgentUpdateSchema, MAX_SOUL_CHARS } from "../src/config/agent-store.js";
import { DeerflowError, ValidationError } from "../src/errors.js";
import { principalOf } from "../src/auth/principal.js";
import { doc, validInput } from "./openapi.js";

/** The agents API is switched off by `agents_api.enabled: false`. HTTP 403. */
class AgentsApiDisabledError extends DeerflowError {
  constructor() {
    super("forbidden", "The agents API is disabled. Set agents_api.enabled=true in config.yaml to enable it.");
  }
}

const ProfileSchema = z.object({ content: z.string().max(MAX_SOUL_CHARS).nullish() });
type NameParams = { Params: { name: string } };

/** Registers `/agents`, `/agents/check`, `/agents/:name` and `/user-profile` (mounted under `/api`). */
export async function agentRoutes(app: FastifyInstance): Promise<void> {
  const store = app.deerflow.agents;
  // Agents live under the caller's own directory (<agents dir>/<user_id>/<name>).
  const userId = (request: FastifyRequest) => principalOf(request).id;

  /** Gate every route on the live config (DeerFlow `_require_agents_api_enabled`). */
  app.addHook("preHandler", async () => {
    if (!app.deerflow.getAppConfig().agents_api.enabled) throw new AgentsApiDisabledError();
  });

  /** An unknown model is a write the operator can fix: 422. */
  const assertKnownModel = (model: string | null | undefined) => {
    if (!model) return;
    if (!app.deerflow.getAppConfig().models.some((m) => m.name === model)) {
      throw new ValidationError(`Unknown model '${model}': it is not configured in config.yaml`);
    }
  };

  // Upstream's list carries every agent's soul (`include_soul=True`); souls are capped at MAX_SOUL_CHARS on write,
  // so the list stays bounded. `?include_soul=false` leaves them out for a caller that only needs the names.
  const ListQuerySchema = z.looseObject({ include_soul: z.union([z.boolean(), z.enum(["true", "false", "1", "0"])]).optional() });
  app.get("/agents", { schema: doc("agents", "List custom agents with their souls (?include_soul=false leaves them out)", { querystring: ListQuerySchema }) }, async (request) => {
    const query = validInput(ListQuerySchema, request.query, "query");
    const withSoul = !(query.include_soul === false || query.include_soul === "false" || query.include_soul === "0");
    const agents = store.list(userId(request));
    return { agents: withSoul ? agents : agents.map(({ soul: _soul, ...rest }) => rest) };
  });

  app.get<{ Querystring: { name?: string } }>("/agents/check", { schema: doc("agents", "Is an agent name available?") }, async (request) => {
    if (typeof request.query.name !== "string") throw new ValidationError("Query parameter 'name' is required");
    const name = validateAgentName(request.query.name);
    return { available: store.isAvailable(name, userId(request)), name };
  });

  app.get<NameParams>("/agents/:name", { schema: doc("agents", "Get a custom agent") }, async (request) => store.get(validateAgentName(request.params.name), userId(request)));

  app.post("/agents", { schema: doc("agents", "Create a custom agent (201)", { body: AgentCreateSchema }) }, async (request, reply) => {
    const body = validInput(AgentCreateSchema, request.body);
    validateAgentName(body.name);
    assertKnownModel(body.model);
    const agent = await store.create(body, userId(request));
    return reply.code(201).send(agent);
  });

  app.put<NameParams>("/agents/:name", { schema: doc("agents", "Partially update a custom agent", { body: AgentUpdateSchema }) }, async (request) => {
    const name = validateAgentName(request.params.name);
    const body = validInput(AgentUpdateSchema, request.body);
    if ("model" in body) assertKnownModel(body.model);
    return store.update(name, body, userId(request));
  });

  app.delete<NameParams>("/agents/:name", { schema: doc("agents", "Delete a custom agent (204)") }, async (request, reply) => {
    const name = validateAgentName(request.params.name);
    await store.delete(name, userId(request));
    // The agent's memory goes with it: a new agent of the same name must not inherit the old conversations.
    await app.deerflow.memoryManager.forget({ userId: userId(request), agentName: name });
    return reply.code(204).send();
  });

  app.get("/user-profile", { schema: doc("agents", "Read the user profile") }, async (request) => ({ content: store.readUserProfile(userId(request)) }));

  app.put("/user-profile", { schema: doc("agents", "Replace the user profile", { body: ProfileSchema }) }, async (request) => {
    const body = validInput(ProfileSchema, request.body);
    return { content: store.writeUserProfile(body.content ?? "", userId(request)) };
  });
}
