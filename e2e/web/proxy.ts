// The reverse proxy in front of the web app, as its nginx config does: `/api/langgraph/*` to the gateway's
// `/api/*`, every other `/api/*` to the gateway, the rest to the app. Bodies stream both ways (SSE included).
import http from "node:http";
import type { AddressInfo } from "node:net";

/** Where a request path goes: `[port, path]`. */
export function routeFor(url: string, gatewayPort: number, appPort: number): [number, string] {
  if (url === "/api/langgraph" || url.startsWith("/api/langgraph/") || url.startsWith("/api/langgraph?")) return [gatewayPort, `/api${url.slice("/api/langgraph".length)}`];
  if (url === "/api" || url.startsWith("/api/") || url.startsWith("/api?")) return [gatewayPort, url];
  return [appPort, url];
}

/** Starts the proxy on `listen` (default 127.0.0.1, a random port); resolves to the server. */
export async function startProxy(gatewayPort: number, appPort: number, listen: { host?: string; port?: number } = {}): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const [port, target] = routeFor(req.url ?? "/", gatewayPort, appPort);
    // The browser's Host header goes through unchanged (nginx `proxy_set_header Host $http_host`): the gateway
    // compares Origin with it on the login routes.
    const upstream = http.request({ host: "127.0.0.1", port, method: req.method, path: target, headers: { ...req.headers, "x-forwarded-for": req.socket.remoteAddress ?? "" } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
      res.end(JSON.stringify({ detail: `proxy: ${err.message}` }));
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port ?? 0, listen.host ?? "127.0.0.1", resolve);
  });
  return server;
}

/** The port a server listens on. */
export const portOf = (server: http.Server) => (server.address() as AddressInfo).port;
