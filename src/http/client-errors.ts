// Requests Node's HTTP parser rejects before Fastify sees them (bad Content-Length, header overflow, a malformed
// request line): answered with the same `{detail}` body as every other error instead of Fastify's default.
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

/** Status and detail per parser error code; anything not listed is a 400 "Malformed HTTP request". */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request timed out before it was complete"],
  HPE_HEADER_OVERFLOW: [431, "Request header fields too large"],
  HPE_INVALID_CONTENT_LENGTH: [400, "Invalid Content-Length header"],
  HPE_UNEXPECTED_CONTENT_LENGTH: [400, "Content-Length and Transfer-Encoding must not both be sent"],
  HPE_INVALID_TRANSFER_ENCODING: [400, "Invalid Transfer-Encoding header"],
  HPE_INVALID_CHUNK_SIZE: [400, "Invalid chunk size in a chunked body"],
  HPE_INVALID_METHOD: [400, "Invalid HTTP method"],
  HPE_INVALID_URL: [400, "Invalid request target"],
  HPE_INVALID_VERSION: [400, "Invalid HTTP version"],
  HPE_INVALID_HEADER_TOKEN: [400, "Invalid header name or value"],
  HPE_LF_EXPECTED: [400, "Malformed line ending in the request"],
  HPE_CR_EXPECTED: [400, "Malformed line ending in the request"],
};

/**
 * The status and `{detail}` text for a parser error (`err.code` as Node's `clientError` event gives it). The
 * detail is fixed text: the parser's own message can quote raw request bytes.
 */
export function describeClientError(code: string | undefined): { status: number; detail: string } {
  const [status, detail] = CLIENT_ERRORS[code ?? ""] ?? [400, "Malformed HTTP request"];
  return { status, detail };
}

/**
 * Fastify `clientErrorHandler`: writes `HTTP/1.1 <status>` with a JSON `{detail}` body and closes the connection
 * (the parser cannot find the next request after an error). A reset or already destroyed socket gets nothing.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const { status, detail } = describeClientError(err.code);
  const body = JSON.stringify({ detail });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
