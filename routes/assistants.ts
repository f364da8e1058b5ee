// Assistant routes (LangGraph API). Every assistant is the lead-agent graph: `lead_agent` (the default agent)
// and one assistant per custom agent (DeerFlow gateway routers/assistants_compat.py).
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import type { AgentRecord } from "../src/config/agent-store.js";
import { NotFoundError } from "../src/errors.js";
import { assistantIdToAgentName } from "../src/runtime/runs/run-config.js";
import { principalOf } from "../src/auth/principal.js";
import { doc, validInput } from "./openapi.js";

const SearchSchema = z.looseObject({
  graph_id: z.string().nullish(),
  name: z.string().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
});

const EPOCH = new Date(0).toISOString();

/** The Assistant resource for the default agent or a custom agent. */
function assistant(agent: AgentRecord | null) {
  return {
    assistant_id: agent ? agent.name : "lead_agent",
    graph_id: "lead_agent",
    name: agent ? agent.name : "lead_agent",
    description: agent ? agent.description || null : "DeerFlow lead agent",
    config: {},
    context: {},
    metadata: { created_by: agent ? "user" : "system" },
    version: 1,
    created_at: EPOCH,
    updated_at: EPOCH,
  };
}

type IdParams = { Params: { assistant_id: string } };

/** Registers `/assistants/search`, `/assistants/:id`, `/assistants/:id/graph`, `/assistants/:id/schemas`. */
export async function assistantRoutes(app: FastifyInstance): Promise<void> {
  const store = app.deerflow.agents;

  /** The lead agent and the caller's custom agents (another user's agents are not assistants of this caller). */
  const all = (request: FastifyRequest) => [assistant(null), ...store.list(principalOf(request).id).map(assistant)];
  const find = (request: FastifyRequest, id: string) => {
    let name: string | null;
    try {
      name = assistantIdToAgentName(id);
    } catch {
      throw new NotFoundError(`Assistant ${id} not found`);
    }
    const match = all(request).find((a) => a.assistant_id === (name ?? "lead_agent"));
    if (!match) throw new NotFoundError(`Assistant ${id} not found`);
    return match;
  };

  app.post("/assistants/search", { schema: doc("assistants", "Search assistants", { body: SearchSchema }) }, async (request) => {
    const { graph_id: graphId, name, metadata, limit, offset } = validInput(SearchSchema, request.body);
    return all(request)
      .filter((a) => !graphId || a.graph_id === graphId)
      .filter((a) => !name || a.name.toLowerCase().includes(name.toLowerCase()))
      .filter((a) => !metadata || Object.entries(metadata).every(([k, v]) => JSON.stringify((a.metadata as Record<string, unknown>)[k]) === JSON.stringify(v)))
      .slice(offset, offset + limit);
  });

  app.get<IdParams>("/assistants/:assistant_id", { schema: doc("assistants", "Get an assistant") }, async (request) => find(request, request.params.assistant_id));

  app.get<IdParams>("/assistants/:assistant_id/graph", { schema: doc("assistants", "Graph of an assistant") }, async (request) => {
    find(request, request.params.assistant_id);
    return { graph_id: "lead_agent", nodes: [], edges: [] };
  });

  app.get<IdParams>("/assistants/:assistant_id/schemas", { schema: doc("assistants", "Schemas of an assistant") }, async (request) => {
    find(request, request.params.assistant_id);
    return { graph_id: "lead_agent", input_schema: {}, output_schema: {}, state_schema: {}, config_schema: {}, context_schema: {} };
  });
}
