// Request ids: taken from the caller's `x-request-id` when it is safe to log and echo, else generated.
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Header that carries a request id in and out (the de facto standard of proxies and load balancers). */
export const REQUEST_ID_HEADER = "x-request-id";

/**
 * What a client-supplied id may look like: 1-128 characters of letters, digits and `.`, `_`, `:`, `-`. UUIDs,
 * ULIDs, W3C trace ids and the usual proxy formats fit; anything else (spaces, CR/LF, quotes, very long values)
 * is replaced, so an id can never forge a log line or a response header.
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Fastify's `genReqId`: the request's `x-request-id` when it matches {@link REQUEST_ID_PATTERN}, else a new UUID.
 * A repeated header (an array) counts as invalid.
 * @returns the id Fastify puts on `request.id` and on every log line of the request.
 */
export function genRequestId(req: IncomingMessage): string {
  const raw = req.headers[REQUEST_ID_HEADER];
  return typeof raw === "string" && REQUEST_ID_PATTERN.test(raw) ? raw : randomUUID();
}
