// The OpenAPI 3.1 description of every route, generated from the route schemas (the same zod schemas the
// handlers read) by @fastify/swagger: served as JSON at /openapi.json, browsable at /docs (@fastify/swagger-ui).
// A body or querystring declared with doc() is validated once, by Fastify's validator compiler with the zod
// original, before any hook or handler; the handler takes the parsed value with validInput(), which does not parse
// it again. Response serialization is plain JSON.stringify (response schemas are documentation only). A route
// without a response schema still gets one (from ROUTE_RESPONSES, else a generic JSON body) plus the `{detail}`
// error responses, so routes added later appear complete without extra work.
import { fastifySwagger } from "@fastify/swagger";
import { fastifySwaggerUi } from "@fastify/swagger-ui";
import type { FastifyInstance, FastifySchema, RouteOptions } from "fastify";
import { z } from "zod";
import { ValidationError } from "../src/errors.js";
import { zodIssuesToDetail } from "../src/runtime/runs/run-request.js";
import { ROUTE_REQUESTS, ROUTE_RESPONSES } from "./openapi-responses.js";

/** The JSON Schema of a zod schema (`io` input for request parts, output for responses), without `$schema`. */
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output" = "input"): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;
  return rest;
}

/** Responses by status: a zod schema (a JSON body) or a raw OpenAPI-style response (`{description, content}`). */
export type DocResponses = Record<string | number, z.ZodType | Record<string, unknown>>;

const responseJson = (responses: DocResponses) =>
  Object.fromEntries(Object.entries(responses).map(([code, r]) => [code, r instanceof z.ZodType ? { description: r.description ?? "Success", ...jsonSchemaOf(r, "output") } : r]));

/**
 * A route's OpenAPI schema: tag, summary, and the JSON Schemas of its body / query / response (from zod).
 * @param parts.response responses by status code; a zod schema documents a JSON body.
 */
export function doc(tag: string, summary: string, parts: { body?: z.ZodType; querystring?: z.ZodType; response?: DocResponses } = {}): FastifySchema {
  return {
    tags: [tag],
    summary,
    ...(parts.body ? { body: validated(parts.body) } : {}),
    ...(parts.querystring ? { querystring: validated(parts.querystring) } : {}),
    ...(parts.response ? { response: responseJson(parts.response) } : {}),
  } as FastifySchema;
}

/** The zod schema behind each JSON schema {@link doc} put on a route: what the validator compiler enforces. */
const ZOD_OF = new WeakMap<object, z.ZodType>();

/** The JSON schema of `schema` for the document, remembered so the route's input is validated with the zod original. */
function validated(schema: z.ZodType): Record<string, unknown> {
  const json = jsonSchemaOf(schema);
  ZOD_OF.set(json, schema);
  return json;
}

/**
 * Fastify's validator compiler: a body or querystring declared with {@link doc} is parsed with its zod schema
 * before any hook or handler of the route runs; the parsed value (defaults applied, coercions done) replaces the
 * raw one (handlers take it with {@link validInput}), and a failure is a 422 whose `detail` lists `{type, loc, msg}`
 * (`loc` starts with `body` or `query`). Schemas that did not come from `doc` (plugins' own) pass through unvalidated.
 */
function zodValidatorCompiler({ schema, httpPart }: { schema: unknown; httpPart?: string }) {
  const zodSchema = typeof schema === "object" && schema !== null ? ZOD_OF.get(schema) : undefined;
  if (!zodSchema) return () => true;
  const root = httpPart === "querystring" ? "query" : "body";
  return (data: unknown) => {
    try {
      return { value: parseInput(zodSchema, data, root) };
    } catch (error) {
      return { error: error as ValidationError };
    }
  };
}

/** Values {@link parseInput} produced, by the schema that produced them: what {@link validInput} need not parse again. */
const PARSED_BY = new WeakMap<object, z.ZodType>();

/** The one parse of a request part: `data` (absent: `{}`) through `schema`, remembered as validated by it. */
function parseInput<S extends z.ZodType>(schema: S, data: unknown, root: "body" | "query"): z.output<S> {
  const parsed = schema.safeParse(data ?? {});
  if (!parsed.success) throw new ValidationError(`Invalid request ${root}`, zodIssuesToDetail(parsed.error.issues, root));
  if (typeof parsed.data === "object" && parsed.data !== null) PARSED_BY.set(parsed.data, schema);
  return parsed.data;
}

/**
 * A request's body (or, with `root` "query", its querystring) as `schema` validates it, typed by the schema. On a
 * route that declares the same schema with {@link doc}, the validator compiler has parsed it already: that value
 * is returned as is, so each request is validated once. Anything else (a part the route does not declare, a
 * form body documented by ROUTE_REQUESTS) is parsed here, with the compiler's 422 detail.
 * @throws ValidationError (422) with a FastAPI-style `detail` list (`loc` starts with `root`) when `value` fails.
 */
export function validInput<S extends z.ZodType>(schema: S, value: unknown, root: "body" | "query" = "body"): z.output<S> {
  if (typeof value === "object" && value !== null && PARSED_BY.get(value) === schema) return value as z.output<S>;
  return parseInput(schema, value, root);
}

/** The error body every route may answer: `{detail}`, a message or the 422 issue list. */
export const ErrorBodySchema = z.object({
  detail: z.union([z.string(), z.array(z.object({ type: z.string(), loc: z.array(z.union([z.string(), z.number()])), msg: z.string() }).loose())]),
});

const errorResponse = (description: string) => ({ description, ...jsonSchemaOf(ErrorBodySchema, "output") });
const genericResponse = { description: "Success", type: "object", additionalProperties: true };

/** `GET /api/threads/:thread_id` -> `getApiThreadsThreadId`: unique per method and path, stable for code generators. */
export function operationIdOf(method: string, url: string): string {
  const words = url.split(/[/:{}*_.-]+/).filter(Boolean);
  // A trailing slash is a distinct route (`/api/channels/` next to `/api/channels`): keep the ids distinct too.
  const suffix = url.endsWith("*") ? "Path" : url.length > 1 && url.endsWith("/") ? "Slash" : "";
  return method.toLowerCase() + words.map((w) => w[0].toUpperCase() + w.slice(1)).join("") + suffix;
}

/**
 * Completes one route's schema for the document: a trailing `*` becomes the path parameter `{path}`; a body the
 * route parses itself comes from ROUTE_REQUESTS; responses come from the route, else ROUTE_RESPONSES, else a
 * generic JSON object; `4XX`/`5XX` `{detail}` errors are added;
 * an operationId is derived from method and path.
 */
function transformRoute({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }): { schema: FastifySchema; url: string } {
  const s = { ...(schema ?? {}) } as FastifySchema & { hide?: boolean; operationId?: string; response?: Record<string, unknown>; params?: unknown };
  if (s.hide) return { schema: s, url };
  const method = String(Array.isArray(route.method) ? route.method[0] : route.method);
  let docUrl = url;
  if (url.endsWith("*")) {
    docUrl = `${url.slice(0, -1)}:path`;
    const names = [...docUrl.matchAll(/:(\w+)/g)].map((m) => m[1]);
    s.params = {
      type: "object",
      properties: Object.fromEntries(names.map((n) => [n, n === "path" ? { type: "string", description: "The rest of the path (may contain slashes)" } : { type: "string" }])),
      required: names,
    };
  }
  const key = `${method} ${url.replace(/^\/api(?=\/)/, "")}`;
  const request = ROUTE_REQUESTS[key];
  if (request && !s.body) Object.assign(s, { body: request.body, consumes: request.consumes });
  if (!s.response) {
    const known = ROUTE_RESPONSES[key];
    s.response = known instanceof z.ZodType ? responseJson({ 200: known }) : known ? responseJson(known as DocResponses) : { 200: genericResponse };
  }
  s.response = { ...s.response, "4XX": errorResponse("Client error: {detail} (a message, or the list of validation issues for 422)"), "5XX": errorResponse("Server error: {detail}") };
  s.operationId ??= operationIdOf(method, url);
  return { schema: s, url: docUrl };
}

/**
 * Registers @fastify/swagger (OpenAPI 3.1.0, every route), `GET /openapi.json` and the browsable UI at `/docs`
 * (@fastify/swagger-ui). Call before the routes, so each is recorded as it is added.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.setValidatorCompiler(zodValidatorCompiler as never);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(fastifySwagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "deerflow-gateway", description: "LangGraph-compatible API for DeerFlow lead agents", version: "0.1.0" },
      tags: [
        { name: "threads", description: "LangGraph threads" },
        { name: "runs", description: "LangGraph runs (SSE streams, wait, join, cancel)" },
        { name: "assistants", description: "LangGraph assistants (the lead agent and custom agents)" },
        { name: "agents", description: "DeerFlow custom agents" },
        { name: "models", description: "Configured chat models" },
        { name: "uploads", description: "Files uploaded to a thread (/mnt/user-data/uploads)" },
        { name: "artifacts", description: "Files of a thread's /mnt/user-data, for download" },
        { name: "usage", description: "Token usage and limits of the caller" },
        { name: "health", description: "Liveness, config health and metrics" },
        { name: "auth", description: "Accounts, sessions and API keys" },
      ],
    },
    transform: transformRoute as never,
  });
  await app.register(fastifySwaggerUi, { routePrefix: "/docs" });
  app.get("/openapi.json", { schema: { hide: true } as FastifySchema }, async () => app.swagger());
}
