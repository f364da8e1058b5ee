// Memory routes of the web app's Settings (DeerFlow app/gateway/routers/memory.py): the caller's memory of one
// agent (`?agent_name=`, default the lead agent), read, reload, clear, facts, export/import, config and status,
// through the memory backend (`memory.manager_class`). An operation the backend lacks answers 501.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { ConflictError, ValidationError } from "../src/errors.js";
import { FactCreateSchema, FactPatchSchema, importedDocument, memoryConfigView, memoryOperation as op, memoryView, MemoryImportSchema, type MemoryScope } from "../src/runtime/webapp/memory-view.js";
import { doc, validInput } from "./openapi.js";

const AgentQuery = z.looseObject({ agent_name: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/).optional() });
type FactParams = { Params: { fact_id: string } };
/** Registers the memory routes under `/api`. */
export async function memoryRoutes(app: FastifyInstance): Promise<void> {
  const { memoryManager: manager, getAppConfig } = app.deerflow;
  const scope = (request: FastifyRequest): MemoryScope => {
    const query = validInput(AgentQuery, request.query, "query");
    return { userId: principalOf(request).id, agentName: query.agent_name?.toLowerCase() ?? "default" };
  };
  const read = async (request: FastifyRequest) => memoryView(await op(manager, "getMemory")(scope(request)));

  app.get("/memory", { schema: doc("memory", "Your memory: summaries and facts") }, read);
  app.post("/memory/reload", { schema: doc("memory", "Apply pending memory updates now and read the memory again") }, async (request) => {
    const s = scope(request);
    await manager.flush(s);
    return memoryView(manager.reloadMemory ? await manager.reloadMemory(s) : await op(manager, "getMemory")(s));
  });
  app.delete("/memory", { schema: doc("memory", "Forget everything") }, async (request) => memoryView(await op(manager, "clearMemory")(scope(request))));
  app.post("/memory/facts", { schema: doc("memory", "Add a fact", { body: FactCreateSchema }) }, async (request) => {
    const body = validInput(FactCreateSchema, request.body);
    const { memory, factId } = await op(manager, "createFact")(scope(request), body);
    if (factId === null) throw new ConflictError("Fact was not stored because the configured memory.max_facts capacity policy evicted it");
    return memoryView(memory);
  });
  app.patch<FactParams>("/memory/facts/:fact_id", { schema: doc("memory", "Edit a fact (omitted fields unchanged)", { body: FactPatchSchema }) }, async (request) => {
    const patch = validInput(FactPatchSchema, request.body);
    if (patch.content == null && patch.category == null && patch.confidence == null) throw new ValidationError("Nothing to change: give content, category or confidence");
    return memoryView(await op(manager, "updateFact")(scope(request), request.params.fact_id, patch));
  });
  app.delete<FactParams>("/memory/facts/:fact_id", { schema: doc("memory", "Delete a fact") }, async (request) => memoryView(await op(manager, "deleteFact")(scope(request), request.params.fact_id)));
  app.get("/memory/export", { schema: doc("memory", "Export your memory") }, read);
  app.post("/memory/import", { schema: doc("memory", "Replace facts and summaries with an export", { body: MemoryImportSchema }) }, async (request) => {
    const body = validInput(MemoryImportSchema, request.body);
    return memoryView(await op(manager, "importMemory")(scope(request), importedDocument(body)));
  });
  app.get("/memory/config", { schema: doc("memory", "Memory configuration") }, async () => memoryConfigView(getAppConfig().memory));
  app.get("/memory/status", { schema: doc("memory", "Memory configuration and data") }, async (request) => ({ config: memoryConfigView(getAppConfig().memory), data: await read(request) }));
}
