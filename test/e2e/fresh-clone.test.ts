import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../support/wait.js";

// Issue 13 item 12: every documented way of starting the gateway works on a fresh clone (no OPENAI_* set, the
// shipped config), and SIGTERM to `npm start` stops the server itself.
const root = path.resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(path.join(tmpdir(), "dfgw-fresh-"));
const started: number[] = [];
afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

function start(command: string, args: string[], port: number, extraEnv: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("OPENAI_") || k.startsWith("DEER_FLOW_") || k.startsWith("npm_") || k === "NODE_OPTIONS") delete env[k];
  Object.assign(env, {
    HOST: "127.0.0.1",
    PORT: String(port),
    DEER_FLOW_CONFIG_PATH: path.join(root, "config", "config.yaml"),
    DEER_FLOW_HOME: path.join(dir, `home-${port}`),
    DEER_FLOW_AGENTS_DIR: path.join(dir, `agents-${port}`),
    ...extraEnv,
  });
  // Own process group, so a failing test can still remove whatever the command started.
  const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  started.push(child.pid!);
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code, signal) => resolve(code ?? (signal ? -1 : null))));
  return { child, exited, output: () => out };
}

const healthy = async (port: number) => {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`)).ok;
  } catch {
    return false;
  }
};
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

// A cold `npm start` (tsx transform of the whole server) takes seconds; on a loaded 2-core host tens of seconds.
describe("starting on a fresh clone", { timeout: 90_000 }, () => {
  it("node --import tsx src/server.ts serves the shipped config without OPENAI_API_KEY", async () => {
    const port = await freePort();
    const server = start(process.execPath, ["--import", "tsx", "src/server.ts"], port);
    await until(() => healthy(port), 75_000, 200);
    // The shipped config loaded (its OpenAI entries reference OPENAI_API_KEY / OPENAI_BASE_URL).
    expect((await (await fetch(`http://127.0.0.1:${port}/health`)).json()).status).toBe("healthy");
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });

  it("SIGTERM to `npm start` stops the node server, not only npm", async () => {
    const port = await freePort();
    const server = start(npm, ["start"], port);
    await until(() => healthy(port), 75_000, 200);
    server.child.kill("SIGTERM");
    await server.exited;
    // Nothing serves on the port any more: the signal reached node (the script execs it).
    await until(async () => !(await healthy(port)), 10_000, 100);
    expect(await healthy(port)).toBe(false);
    expect(server.output()).toContain("shutting down");
    // The start script's heap sizing reached V8: 1536 MB old generation + a 3 x 8 MB young generation, and the
    // flags of scripts/v8-flags.mjs are on node's command line.
    expect(server.output()).toContain('"heap_limit_mb":1560');
    expect(server.output()).toContain('"--heap-growing-percent=25"');
  });

  it("the Docker image sets the same heap flags as `npm start`", () => {
    const start = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start;
    const fromStart = /NODE_OPTIONS=\\?"([^$"]*)/.exec(start)?.[1].trim();
    const fromImage = /^ENV NODE_OPTIONS="([^"]*)"$/m.exec(readFileSync(path.join(root, "Dockerfile"), "utf8"))?.[1].trim();
    expect(fromStart).toMatch(/--max-old-space-size=\d+/);
    expect(fromImage).toBe(fromStart);
    // And the same command-line flags, from the same script.
    expect(start).toContain("exec node $(node scripts/v8-flags.mjs) dist/src/server.js");
    const dockerfile = readFileSync(path.join(root, "Dockerfile"), "utf8");
    expect(dockerfile).toContain('CMD ["sh", "-c", "exec node $(node scripts/v8-flags.mjs) dist/src/server.js"]');
    expect(dockerfile).toMatch(/^COPY --from=build \/app\/scripts\/v8-flags\.mjs \.\/scripts\/v8-flags\.mjs$/m);
  });

  it("`npm start` takes the operator's NODE_OPTIONS and DEER_FLOW_V8_FLAGS over its heap defaults", async () => {
    const port = await freePort();
    const server = start(npm, ["start"], port, { NODE_OPTIONS: "--max-old-space-size=1024 --max-semi-space-size=32", DEER_FLOW_V8_FLAGS: "--heap-growing-percent=50" });
    await until(() => healthy(port), 75_000, 200);
    server.child.kill("SIGTERM");
    await server.exited;
    // The operator's old and young generation sizes win (1024 + 3 x 32 MB), and their flag list replaces the defaults.
    expect(server.output()).toContain('"heap_limit_mb":1120');
    expect(server.output()).toContain('"exec_argv":["--heap-growing-percent=50"]');
  });

  it("`npm run dev` serves, and stops on SIGTERM", async () => {
    const port = await freePort();
    const server = start(npm, ["run", "dev"], port);
    await until(() => healthy(port), 75_000, 200);
    server.child.kill("SIGTERM");
    await server.exited;
    await until(async () => !(await healthy(port)), 10_000, 100);
    expect(await healthy(port)).toBe(false);
  });
});
