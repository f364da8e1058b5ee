// OpenAPI description of the routes (served at /docs), generated from the same zod schemas the handlers validate
// with. Route schemas are documentation only: Fastify's own validation is switched off, zod stays authoritative.
import { fastifySwagger } from "@fastify/swagger";
import type { FastifyInstance, FastifySchema } from "fastify";
import { z } from "zod";

/** A route's OpenAPI schema: summary, tag, and the JSON Schema of its body / query (input side of the zod schema). */
export function doc(tag: string, summary: string, parts: { body?: z.ZodType; querystring?: z.ZodType } = {}): FastifySchema {
  const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return {
    tags: [tag],
    summary,
    ...(parts.body ? { body: json(parts.body) } : {}),
    ...(parts.querystring ? { querystring: json(parts.querystring) } : {}),
  } as FastifySchema;
}

/** Registers @fastify/swagger and `GET /docs` (the OpenAPI 3 JSON document). Call before the routes. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.setValidatorCompiler(() => () => true);
  await app.register(fastifySwagger, {
    openapi: {
      info: { title: "deerflow-gateway", description: "LangGraph-compatible API for DeerFlow lead agents", version: "0.1.0" },
      tags: [
        { name: "threads", description: "LangGraph threads" },
        { name: "runs", description: "LangGraph runs (SSE streams, wait, join, cancel)" },
        { name: "assistants", description: "LangGraph assistants (the lead agent and custom agents)" },
        { name: "agents", description: "DeerFlow custom agents" },
        { name: "models", description: "Configured chat models" },
        { name: "uploads", description: "Files uploaded to a thread (/mnt/user-data/uploads)" },
        { name: "artifacts", description: "Files of a thread's /mnt/user-data, for download" },
        { name: "health", description: "Liveness and config health" },
        { name: "auth", description: "Accounts, sessions and API keys" },
      ],
    },
  });
  app.get("/docs", { schema: { hide: true } as FastifySchema }, async () => app.swagger());
}
