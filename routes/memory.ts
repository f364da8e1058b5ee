// Memory routes of the web app's Settings (DeerFlow app/gateway/routers/memory.py): the caller's memory of one
// agent (`?agent_name=`, default the lead agent), read, reload, clear, facts, export/import, config and status.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { ValidationError } from "../src/errors.js";
import { FactCreateSchema, FactPatchSchema, MemoryImportSchema, MemoryService } from "../src/runtime/web/memory-view.js";
import { doc } from "./openapi.js";
import { parseOr422 } from "./thread-feed.js";

const AgentQuery = z.looseObject({ agent_name: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/).optional() });
type FactParams = { Params: { fact_id: string } };

/** Registers the memory routes under `/api`. */
export async function memoryRoutes(app: FastifyInstance): Promise<void> {
  const { memoryQueue, getAppConfig } = app.deerflow;
  const service = (request: FastifyRequest) => {
    const query = parseOr422(AgentQuery, request.query, "query");
    return new MemoryService(memoryQueue.store, principalOf(request).id, query.agent_name?.toLowerCase() ?? "default");
  };
  const config = () => {
    const m = getAppConfig().memory;
    return { enabled: m.enabled, mode: m.mode, injection_enabled: m.injection_enabled, shutdown_flush_timeout_seconds: m.shutdown_flush_timeout_seconds, manager_class: m.manager_class, backend_config: m.backend_config };
  };

  app.get("/memory", { schema: doc("memory", "Your memory: summaries and facts") }, async (request) => service(request).read());
  app.post("/memory/reload", { schema: doc("memory", "Apply pending memory updates now and read the memory again") }, async (request) => {
    await memoryQueue.flush();
    return service(request).read();
  });
  app.delete("/memory", { schema: doc("memory", "Forget everything") }, async (request) => {
    const svc = service(request);
    // Pending updates would otherwise write the cleared conversations back a moment later.
    await memoryQueue.flush();
    return svc.clear();
  });
  app.post("/memory/facts", { schema: doc("memory", "Add a fact", { body: FactCreateSchema }) }, async (request) => service(request).addFact(parseOr422(FactCreateSchema, request.body)));
  app.patch<FactParams>("/memory/facts/:fact_id", { schema: doc("memory", "Edit a fact (omitted fields unchanged)", { body: FactPatchSchema }) }, async (request) => {
    const patch = parseOr422(FactPatchSchema, request.body);
    if (patch.content == null && patch.category == null && patch.confidence == null) throw new ValidationError("Nothing to change: give content, category or confidence");
    return service(request).patchFact(request.params.fact_id, patch);
  });
  app.delete<FactParams>("/memory/facts/:fact_id", { schema: doc("memory", "Delete a fact") }, async (request) => service(request).deleteFact(request.params.fact_id));
  app.get("/memory/export", { schema: doc("memory", "Export your memory") }, async (request) => service(request).read());
  app.post("/memory/import", { schema: doc("memory", "Replace facts and summaries with an export", { body: MemoryImportSchema }) }, async (request) => {
    const body = parseOr422(MemoryImportSchema, request.body);
    await memoryQueue.flush();
    return service(request).import(body);
  });
  app.get("/memory/config", { schema: doc("memory", "Memory configuration") }, async () => config());
  app.get("/memory/status", { schema: doc("memory", "Memory configuration and data") }, async (request) => ({ config: config(), data: service(request).read() }));
}
