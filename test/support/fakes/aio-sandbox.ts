// A local fake of DeerFlow's container sandbox (the agent-infra AIO sandbox HTTP API: /v1/sandbox, /v1/shell/exec,
// /v1/file/{read,write,list,find,grep,download}) and of DeerFlow's provisioner (/api/sandboxes). Each sandbox is a
// temp directory standing for the container's `/`: files are stored under it and commands really run in it
// (bash, with `/mnt/user-data` rewritten to the directory and back in the output). One server on 127.0.0.1:0.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import picomatch from "picomatch";

/** One request the fake saw (route without the sandbox prefix, headers lower-cased, JSON body). */
export interface SeenRequest {
  sandbox: string | null;
  method: string;
  route: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** A fault to inject: answer `route` (or every sandbox route when omitted) with `status`, or after `delayMs`. */
export interface Fault {
  route?: string;
  status?: number;
  delayMs?: number;
}

/** The fake's handle for tests. */
export interface FakeAioSandbox {
  /** `http://127.0.0.1:<port>`: the provisioner's base URL. */
  url: string;
  /** Base URL of one sandbox (created on first use), for `sandbox.base_url`. */
  sandboxUrl(id: string): string;
  /** The temp directory that stands for sandbox `id`'s `/`. */
  rootOf(id: string): string;
  /** Sandboxes the provisioner created, in order, with what it was sent. */
  created: { sandbox_id: string; thread_id: string; user_id: string }[];
  /** Sandbox ids the provisioner destroyed. */
  destroyed: string[];
  requests: SeenRequest[];
  /** Faults in force (tests push and clear them). */
  faults: Fault[];
  /** When set, the provisioner requires this `X-API-Key` and the sandboxes this bearer token. */
  keys: { provisioner?: string; sandbox?: string };
  close(): Promise<void>;
}

const send = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
const ok = (res: ServerResponse, data: unknown) => send(res, 200, { success: true, message: "ok", data });
const fail = (res: ServerResponse, status: number, message: string) => send(res, status, { success: false, message, data: null });

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString("utf8");
  return raw ? JSON.parse(raw) : undefined;
}

/** Every entry under `dir` (depth-first), as [absolute host path, is directory, depth from dir]. */
function walk(dir: string, depth = 1, out: [string, boolean, number][] = []): [string, boolean, number][] {
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    const isDir = statSync(full).isDirectory();
    out.push([full, isDir, depth]);
    if (isDir) walk(full, depth + 1, out);
  }
  return out;
}

/** Runs `command` with bash in `cwd`; kills the process group after `timeoutS`. */
function run(command: string, cwd: string, timeoutS: number): Promise<{ output: string; code: number | null; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", command], { cwd, detached: true, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, LANG: "C.UTF-8" } });
    let output = "";
    let timedOut = false;
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }, timeoutS * 1000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ output, code, timedOut });
    });
  });
}

/** Starts the fake on 127.0.0.1:0. Close it in afterAll. */
export async function startFakeAioSandbox(): Promise<FakeAioSandbox> {
  const base = mkdtempSync(path.join(tmpdir(), "fake-aio-"));
  const roots = new Map<string, string>();
  const rootOf = (id: string) => {
    let root = roots.get(id);
    if (!root) {
      root = path.join(base, id.replace(/[^\w-]/g, "_"));
      mkdirSync(root, { recursive: true });
      roots.set(id, root);
    }
    return root;
  };
  const state: Omit<FakeAioSandbox, "url" | "sandboxUrl" | "close"> = { rootOf, created: [], destroyed: [], requests: [], faults: [], keys: {} };
  let origin = "";

  const sandboxRoute = async (id: string, route: string, req: IncomingMessage, res: ServerResponse, body: any, query: URLSearchParams) => {
    const root = rootOf(id);
    const host = (p: string) => path.join(root, p);
    const virtual = (h: string) => `/${path.relative(root, h)}`;
    if (state.keys.sandbox && req.headers.authorization !== `Bearer ${state.keys.sandbox}`) return fail(res, 401, "Unauthorized");
    if (route === "/v1/sandbox") return ok(res, { home_dir: "/home/gem" });
    if (route === "/v1/shell/exec") {
      const rewrite = (s: string) => s.split("/mnt/user-data").join(`${root}/mnt/user-data`);
      const cwd = existsSync(host(body.exec_dir ?? "/")) ? host(body.exec_dir ?? "/") : root;
      const r = await run(rewrite(body.command), cwd, Number(body.no_change_timeout ?? 120));
      return ok(res, { output: r.output.split(root).join(""), exit_code: r.code, status: r.timedOut ? "no_change_timeout" : "completed" });
    }
    if (route === "/v1/file/read") {
      const h = host(body.file);
      if (!existsSync(h)) return fail(res, 404, `File not found: ${body.file}`);
      if (statSync(h).isDirectory()) return fail(res, 400, `Is a directory: ${body.file}`);
      return ok(res, { file: body.file, content: readFileSync(h, "utf8") });
    }
    if (route === "/v1/file/write") {
      const h = host(body.file);
      mkdirSync(path.dirname(h), { recursive: true });
      const data = body.encoding === "base64" ? Buffer.from(body.content, "base64") : Buffer.from(body.content, "utf8");
      if (body.append) appendFileSync(h, data);
      else writeFileSync(h, data);
      return ok(res, { file: body.file, bytes_written: data.length });
    }
    if (route === "/v1/file/list") {
      const h = host(body.path);
      if (!existsSync(h)) return fail(res, 404, `Directory not found: ${body.path}`);
      if (!statSync(h).isDirectory()) return fail(res, 400, `Not a directory: ${body.path}`);
      const max = body.recursive ? Number(body.max_depth ?? 1000) : 1;
      const files = walk(h).filter(([, , d]) => d <= max).map(([f, isDir]) => ({ name: path.basename(f), path: virtual(f), is_directory: isDir }));
      return ok(res, { path: body.path, files, total_count: files.length });
    }
    if (route === "/v1/file/find") {
      const h = host(body.path);
      if (!existsSync(h)) return fail(res, 404, `Directory not found: ${body.path}`);
      const match = picomatch(body.glob, { dot: true, basename: !String(body.glob).includes("/") });
      return ok(res, { files: walk(h).filter(([f, isDir]) => !isDir && match(path.relative(h, f))).map(([f]) => virtual(f)) });
    }
    if (route === "/v1/file/grep") {
      const h = host(body.path);
      if (!existsSync(h)) return fail(res, 404, `Path not found: ${body.path}`);
      const source = body.fixed_strings ? body.pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : body.pattern;
      const regex = new RegExp(source, body.case_insensitive ? "i" : "");
      const files = statSync(h).isDirectory() ? walk(h).filter(([, d]) => !d).map(([f]) => f) : [h];
      const matches = files.flatMap((f) => readFileSync(f, "utf8").split("\n").flatMap((line, i) => (regex.test(line) ? [{ file: virtual(f), line_number: i + 1, line_content: line }] : [])));
      return ok(res, { matches: matches.slice(0, body.max_results ?? 100), truncated: matches.length > (body.max_results ?? 100) });
    }
    if (route === "/v1/file/download") {
      const h = host(query.get("path") ?? "");
      if (!existsSync(h) || statSync(h).isDirectory()) return fail(res, 404, `File not found: ${query.get("path")}`);
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return res.end(readFileSync(h));
    }
    return fail(res, 404, `No route ${route}`);
  };

  const provisionerRoute = (req: IncomingMessage, res: ServerResponse, route: string, body: any) => {
    if (state.keys.provisioner && req.headers["x-api-key"] !== state.keys.provisioner) return send(res, 401, { detail: "Invalid API key" });
    if (req.method === "POST" && route === "/api/sandboxes") {
      state.created.push({ sandbox_id: body.sandbox_id, thread_id: body.thread_id, user_id: body.user_id });
      rootOf(body.sandbox_id);
      return send(res, 200, { sandbox_id: body.sandbox_id, sandbox_url: `${origin}/sb/${body.sandbox_id}`, status: "Running" });
    }
    const id = decodeURIComponent(route.slice("/api/sandboxes/".length));
    if (req.method === "DELETE") {
      state.destroyed.push(id);
      const root = roots.get(id);
      roots.delete(id);
      if (root) rmSync(root, { recursive: true, force: true });
      return send(res, 200, { ok: true });
    }
    return roots.has(id) ? send(res, 200, { sandbox_id: id, sandbox_url: `${origin}/sb/${id}`, status: "Running" }) : send(res, 404, { detail: "not found" });
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", origin);
      const body = req.method === "GET" ? undefined : await readBody(req);
      const m = /^\/sb\/([^/]+)(\/.*)$/.exec(url.pathname);
      const route = m ? m[2] : url.pathname;
      state.requests.push({ sandbox: m ? m[1] : null, method: req.method ?? "GET", route, headers: req.headers, body });
      if (!m) return provisionerRoute(req, res, route, body);
      const fault = state.faults.find((f) => !f.route || f.route === route);
      if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
      if (fault?.status) return fail(res, fault.status, "Internal sandbox failure (injected)");
      return sandboxRoute(m[1], route, req, res, body, url.searchParams);
    })().catch((err) => {
      if (!res.headersSent) fail(res, 500, String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    ...state,
    url: origin,
    sandboxUrl: (id) => {
      rootOf(id);
      return `${origin}/sb/${id}`;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(base, { recursive: true, force: true });
    },
  };
}
