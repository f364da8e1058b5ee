// Per-route request body limits and the socket timeouts that bound how long a client may take to send a request.
import type { FastifyInstance, RouteOptions } from "fastify";

/** Body limit of every JSON route not listed below, in bytes (thread/agent/search bodies are small). */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Body limit of the routes that carry messages (run creation, state updates), in bytes. */
export const MESSAGE_BODY_LIMIT = 8 * 1024 * 1024;

/**
 * Routes whose bodies carry whole messages (an inline image, a pasted document): run creation on a thread or
 * stateless (`/runs`, `/runs/stream`, `/runs/wait`) and `POST /threads/{id}/state`, with or without `/api`.
 */
const MESSAGE_ROUTE = /^(?:\/api)?(?:\/threads\/:thread_id)?\/runs(?:\/stream|\/wait)?$|^(?:\/api)?\/threads\/:thread_id\/state$/;

/**
 * The body limit of a route, in bytes: {@link MESSAGE_BODY_LIMIT} for the message-carrying POST routes, else
 * {@link DEFAULT_BODY_LIMIT}. Multipart uploads are bounded by their own configured limits (`uploads` in config).
 */
export function bodyLimitFor(method: string | string[], url: string): number {
  const methods = Array.isArray(method) ? method : [method];
  return methods.includes("POST") && MESSAGE_ROUTE.test(url) ? MESSAGE_BODY_LIMIT : DEFAULT_BODY_LIMIT;
}

/**
 * Gives every route registered after this call its body limit (see {@link bodyLimitFor}) unless the route sets
 * one itself. Must be installed before the routes. A larger body is answered 413 by Fastify before it is parsed.
 */
export function installBodyLimits(app: FastifyInstance): void {
  app.addHook("onRoute", (route: RouteOptions) => {
    if (route.bodyLimit === undefined) route.bodyLimit = bodyLimitFor(route.method, route.url ?? "");
  });
}

/** Socket timeouts of the HTTP server, in ms. */
export interface ServerTimeouts {
  /** Most time to receive a request's headers (slowloris on headers); Node's `headersTimeout`. */
  headersTimeoutMs: number;
  /** Most time to receive a whole request, body included; Node's `requestTimeout`. Responses (SSE) are not bounded. */
  requestTimeoutMs: number;
  /** How often Node checks both timeouts; a timeout fires at most this much late. */
  checkIntervalMs: number;
}

/** Defaults: 10 s for headers, 120 s for a whole request (a large upload over a slow link), checked every second. */
export const DEFAULT_SERVER_TIMEOUTS: Readonly<ServerTimeouts> = Object.freeze({ headersTimeoutMs: 10_000, requestTimeoutMs: 120_000, checkIntervalMs: 1_000 });
