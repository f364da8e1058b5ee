// `npm run webapp -- --frontend <path>`: the DeerFlow web app for users, served with this gateway on one port.
// Builds the frontend checkout once (cached by a hash of its source, see frontend.ts), starts the gateway
// (src/server.ts, with the caller's environment and config) and `next start` on private loopback ports, and puts
// the proxy the app's nginx config describes in front of both (`/api/langgraph/*` -> gateway `/api/*`, `/api/*` ->
// gateway, the rest -> the app). Stops everything on Ctrl-C. Documented in docs/web-app.md.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildPlan, checkFrontendSource, defaultCacheRoot, ensureFrontendBuild, FrontendSourceError, nextBin } from "./frontend.js";
import { startProxy } from "./proxy.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The command line, parsed. `port`/`host`: where the one public port listens. */
export interface WebappOptions {
  frontend: string;
  port: number;
  host: string;
  cacheRoot: string;
  /** Only say whether the build is cached and where, then exit (`--check`). */
  checkOnly: boolean;
}

export const USAGE = "usage: npm run webapp -- --frontend <path to deer-flow/frontend> [--port 3000] [--host 127.0.0.1] [--cache <dir>] [--check]";

/** Thrown for a bad command line: its message is the one line to show (with {@link USAGE}). */
export class UsageError extends Error {}

/**
 * Parses `--frontend <dir>` (or `$DEER_FLOW_FRONTEND_DIR`), `--port <1-65535>` (default `$PORT` or 3000),
 * `--host <addr>` (default 127.0.0.1), `--cache <dir>` (default `$DEER_FLOW_E2E_CACHE` or
 * `~/.cache/deerflow-gateway/e2e-web`), `--check`. `--name=value` works too.
 * @throws UsageError for an unknown flag, a flag without its value, a bad port, or no frontend.
 */
export function parseWebappArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): WebappOptions {
  const values: Record<string, string> = {};
  let checkOnly = false;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (flag === "--check") {
      checkOnly = true;
      continue;
    }
    if (!["--frontend", "--port", "--host", "--cache"].includes(flag)) throw new UsageError(`unknown argument '${argv[i]}'`);
    const value = inline ?? argv[++i];
    if (value === undefined || value === "" || value.startsWith("--")) throw new UsageError(`${flag} needs a value`);
    values[flag.slice(2)] = value;
  }
  const frontend = values.frontend ?? env.DEER_FLOW_FRONTEND_DIR;
  if (!frontend) throw new UsageError("--frontend is required (the frontend/ folder of a deer-flow checkout)");
  const portText = values.port ?? env.PORT ?? "3000";
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65535) throw new UsageError(`--port must be 1-65535, got '${portText}'`);
  return { frontend, port, host: values.host ?? "127.0.0.1", cacheRoot: values.cache ?? env.DEER_FLOW_E2E_CACHE ?? defaultCacheRoot(), checkOnly };
}

const children: ChildProcess[] = [];
function start(label: string, cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): void {
  const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  const out = (chunk: Buffer) => process.stdout.write(chunk.toString().replace(/^/gm, `[${label}] `));
  child.stdout!.on("data", out);
  child.stderr!.on("data", out);
  child.on("exit", (code, signal) => {
    if (stopping) return;
    console.error(`[webapp] ${label} exited (${signal ?? code}); stopping`);
    stop(1);
  });
  children.push(child);
}

let stopping = false;
function stop(code: number): void {
  stopping = true;
  for (const c of children) c.kill("SIGTERM");
  process.exit(code);
}

/** A free loopback port, from the OS. */
async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const s = createServer().once("error", reject).listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function main(): Promise<void> {
  const options = parseWebappArgs(process.argv.slice(2));
  const source = checkFrontendSource(options.frontend, "pass --frontend <path to deer-flow/frontend>");
  const plan = buildPlan(source, options.cacheRoot);
  if (options.checkOnly) {
    console.log(`[webapp] ${plan.cached ? "cached" : "not built"}: ${plan.appDir}`);
    return;
  }
  const appDir = await ensureFrontendBuild(source, options.cacheRoot);
  const gatewayPort = await freePort();
  const appPort = await freePort();
  start("gateway", process.execPath, ["--import", "tsx", path.join(REPO, "src", "server.ts")], REPO, { ...process.env, HOST: "127.0.0.1", PORT: String(gatewayPort) });
  start("app", nextBin(appDir), ["start", "-p", String(appPort), "-H", "127.0.0.1"], appDir, {
    ...process.env, NODE_ENV: "production", DEER_FLOW_INTERNAL_GATEWAY_BASE_URL: `http://127.0.0.1:${gatewayPort}`, NEXT_TELEMETRY_DISABLED: "1",
  });
  await startProxy(gatewayPort, appPort, { host: options.host, port: options.port });
  console.log(`[webapp] DeerFlow web app on http://${options.host}:${options.port} (gateway :${gatewayPort}, app :${appPort}); Ctrl-C stops`);
  process.on("SIGINT", () => stop(0));
  process.on("SIGTERM", () => stop(0));
}

// Run only as the entry point, so tests can import the parser.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: Error) => {
    if (err instanceof UsageError) console.error(`npm run webapp: ${err.message}\n${USAGE}`);
    else if (err instanceof FrontendSourceError) console.error(`npm run webapp ${err.message}`);
    else console.error(`[webapp] ${err.stack ?? err.message}`);
    stop(err instanceof UsageError ? 2 : 1);
  });
}
