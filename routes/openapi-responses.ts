// Response schemas of the routes that do not declare their own (`doc(..., {response})`), by "METHOD /path" with
// the `/api` prefix stripped (LangGraph routes are served at both). A route missing here still gets a generic
// JSON response and the error responses (see openapi.ts), so new routes always appear in the document.
import { z } from "zod";

const json = z.record(z.string(), z.unknown());
const ok = z.object({ success: z.boolean(), message: z.string() }).loose();

/** A LangGraph thread (`values` only on `GET /threads/{id}`). */
export const ThreadSchema = z
  .object({
    thread_id: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    metadata: json,
    status: z.enum(["idle", "busy", "interrupted", "error"]),
    values: json.optional(),
    interrupts: json.optional(),
  })
  .loose();

/** A LangGraph run. */
export const RunSchema = z
  .object({
    run_id: z.string(),
    thread_id: z.string(),
    assistant_id: z.string(),
    status: z.enum(["pending", "running", "success", "error", "timeout", "interrupted"]),
    metadata: json.describe("Run metadata: request_id, model_name, model_fallbacks, ..."),
    kwargs: json,
    multitask_strategy: z.enum(["reject", "interrupt", "rollback", "enqueue"]),
    created_at: z.string(),
    updated_at: z.string(),
    error: z.string().optional(),
  })
  .loose();

const CheckpointSchema = z.object({ thread_id: z.string(), checkpoint_ns: z.string(), checkpoint_id: z.string() }).loose();

/** A thread's state at a checkpoint. */
export const ThreadStateSchema = z
  .object({
    values: json,
    next: z.array(z.string()),
    checkpoint: CheckpointSchema.nullable(),
    parent_checkpoint: CheckpointSchema.nullable(),
    metadata: json.nullable(),
    created_at: z.string().nullable(),
    tasks: z.array(json),
    interrupts: z.array(json).optional(),
  })
  .loose();

/** The lead agent or a custom agent as a LangGraph assistant. */
export const AssistantSchema = z
  .object({ assistant_id: z.string(), graph_id: z.string(), name: z.string(), config: json, metadata: json, created_at: z.string(), updated_at: z.string(), version: z.number() })
  .loose();

const ModelSchema = z
  .object({ name: z.string(), model: z.string(), display_name: z.string().nullable(), description: z.string().nullable(), supports_thinking: z.boolean(), supports_reasoning_effort: z.boolean() })
  .loose();

/** A custom agent (config.yaml + SOUL.md). */
export const AgentSchema = z.object({ name: z.string(), description: z.string().nullable().optional(), model: z.string().nullable().optional(), soul: z.string().nullable().optional() }).loose();

const UploadedFileSchema = z.object({ filename: z.string(), size: z.number(), path: z.string(), virtual_path: z.string() }).loose();

/** Final state values of a run (`/wait`, `/join`), or `{__error__: {error, message}}` when it failed. */
export const RunResultSchema = json.describe("The thread's final state values, or {__error__: {error, message}} when the run failed");

const noContent = { description: "No content" };
const sse = { description: "Server-sent events: metadata, values, messages, updates, custom, error, end", content: { "text/event-stream": { schema: { type: "string" } } } };

/** Responses by "METHOD /path" (`/api` stripped): a zod schema for the 200 body, or responses by status code. */
export const ROUTE_RESPONSES: Record<string, z.ZodType | Record<number, z.ZodType | Record<string, unknown>>> = {
  "GET /models": z.object({ models: z.array(ModelSchema), token_usage: z.object({ enabled: z.boolean() }) }),
  "GET /models/:name": ModelSchema,
  "GET /agents": z.object({ agents: z.array(AgentSchema) }).loose(),
  "GET /agents/check": z.object({ available: z.boolean(), name: z.string() }),
  "GET /agents/:name": AgentSchema,
  "POST /agents": { 201: AgentSchema },
  "PUT /agents/:name": AgentSchema,
  "DELETE /agents/:name": { 204: noContent },
  "GET /user-profile": z.object({ content: z.string().nullable() }),
  "PUT /user-profile": z.object({ content: z.string().nullable() }),
  "POST /threads": ThreadSchema,
  "POST /threads/search": z.array(ThreadSchema),
  "GET /threads/:thread_id": ThreadSchema,
  "PATCH /threads/:thread_id": ThreadSchema,
  "DELETE /threads/:thread_id": ok,
  "GET /threads/:thread_id/state": ThreadStateSchema,
  "GET /threads/:thread_id/state/:checkpoint_id": ThreadStateSchema,
  "POST /threads/:thread_id/state/checkpoint": ThreadStateSchema,
  "POST /threads/:thread_id/state": z.object({ checkpoint: CheckpointSchema }).loose(),
  "POST /threads/:thread_id/history": z.array(ThreadStateSchema),
  "POST /threads/:thread_id/runs/stream": { 200: sse },
  "POST /runs/stream": { 200: sse },
  "POST /threads/:thread_id/runs/wait": RunResultSchema,
  "POST /runs/wait": RunResultSchema,
  "POST /threads/:thread_id/runs": RunSchema,
  "POST /runs": RunSchema,
  "GET /threads/:thread_id/runs": z.array(RunSchema),
  "GET /threads/:thread_id/runs/:run_id": RunSchema,
  "DELETE /threads/:thread_id/runs/:run_id": { 204: noContent },
  "POST /threads/:thread_id/runs/:run_id/cancel": { 202: { description: "Cancellation requested" }, 204: { description: "The run has stopped (wait=1)" } },
  "GET /threads/:thread_id/runs/:run_id/join": RunResultSchema,
  "GET /threads/:thread_id/runs/:run_id/stream": { 200: sse },
  "POST /threads/:thread_id/runs/:run_id/stream": { 200: sse, 204: { description: "The run has stopped (wait=1)" } },
  "POST /assistants/search": z.array(AssistantSchema),
  "GET /assistants/:assistant_id": AssistantSchema,
  "GET /assistants/:assistant_id/graph": z.object({ graph_id: z.string(), nodes: z.array(json), edges: z.array(json) }).loose(),
  "GET /assistants/:assistant_id/schemas": z.object({ graph_id: z.string() }).loose(),
  "POST /threads/:thread_id/uploads": z.object({ success: z.boolean(), files: z.array(UploadedFileSchema), message: z.string() }).loose(),
  "GET /threads/:thread_id/uploads": z.object({ files: z.array(UploadedFileSchema), count: z.number().int() }),
  "DELETE /threads/:thread_id/uploads/:filename": ok,
  "GET /threads/:thread_id/artifacts/*": { 200: { description: "The file (inline for inert types, else an attachment)", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } } },
};

/** Request bodies of routes that parse their own (multipart uploads), by the same keys as {@link ROUTE_RESPONSES}. */
export const ROUTE_REQUESTS: Record<string, { consumes: string[]; body: Record<string, unknown> }> = {
  "POST /threads/:thread_id/uploads": {
    consumes: ["multipart/form-data"],
    body: { type: "object", properties: { files: { type: "array", items: { type: "string", contentMediaType: "application/octet-stream" } } }, required: ["files"] },
  },
  // The web app posts the OAuth2 password form; JSON with the same fields works too.
  "POST /v1/auth/login/local": {
    consumes: ["application/x-www-form-urlencoded", "application/json"],
    body: {
      type: "object",
      properties: { username: { type: "string", description: "The account's email" }, password: { type: "string" }, remember_me: { type: "boolean", default: true } },
      required: ["username", "password"],
    },
  },
};
