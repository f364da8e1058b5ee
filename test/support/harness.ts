// Test harness: a temp project (config.yaml, DEER_FLOW_HOME, agents dir) and the app on a random port.
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp, type BuildAppOptions } from "../../src/app.js";
import { resetAppConfig } from "../../src/config/app-config.js";

/** A running gateway over a temp project. */
export interface Harness {
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  url: string;
  dir: string;
  configPath: string;
  /** Rewrites config.yaml (and bumps its mtime) so the next request sees it. */
  writeConfig(yaml: string): void;
  close(): Promise<void>;
}

/**
 * buildApp for tests: auth disabled unless `options.authDisabled` says otherwise (the suite predates auth and
 * tests ownership and sign-in explicitly with `authDisabled: false`).
 */
export function buildTestApp(options: BuildAppOptions = {}): Promise<FastifyInstance> {
  return buildApp({ heartbeatMs: 0, authDisabled: true, ...options });
}

const ENV_KEYS = ["DEER_FLOW_CONFIG_PATH", "DEER_FLOW_HOME", "DEER_FLOW_AGENTS_DIR", "DEER_FLOW_PROJECT_ROOT"] as const;

/**
 * Creates a temp project with `configYaml` as its config.yaml, points the DEER_FLOW_* variables at it, and
 * starts the app on 127.0.0.1 with a random port. `close()` restores the environment.
 */
export async function startHarness(configYaml: string, options: BuildAppOptions = {}): Promise<Harness> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-"));
  const configPath = path.join(dir, "config.yaml");
  writeFileSync(configPath, configYaml);
  const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  process.env.DEER_FLOW_CONFIG_PATH = configPath;
  process.env.DEER_FLOW_HOME = path.join(dir, ".deer-flow");
  process.env.DEER_FLOW_AGENTS_DIR = path.join(dir, "agents");
  resetAppConfig();
  const restoreEnv = () => {
    for (const k of ENV_KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  };
  let app: FastifyInstance;
  try {
    app = await buildTestApp(options);
  } catch (err) {
    // A config the gateway refuses at start: leave no temp project or environment behind.
    resetAppConfig();
    restoreEnv();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  let bump = 0;
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    dir,
    configPath,
    writeConfig(yaml: string) {
      writeFileSync(configPath, yaml);
      const t = new Date(Date.now() + ++bump * 5000);
      utimesSync(configPath, t, t);
    },
    async close() {
      await app.close();
      resetAppConfig();
      restoreEnv();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** POSTs JSON and returns the response. */
export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

/** One file of an upload: its name, its content, and optionally its MIME type (default none). */
export type UploadFile = [name: string, content: Buffer | string, type?: string];

/**
 * Uploads `files` to a thread the way the web app does (`POST /api/threads/{id}/uploads`, multipart field `files`)
 * and returns the response.
 * @param baseUrl The gateway's base URL (`harness.url`).
 */
export function uploadFiles(baseUrl: string, threadId: string, files: UploadFile[]): Promise<Response> {
  const form = new FormData();
  for (const [name, content, type] of files) {
    form.append("files", new Blob([typeof content === "string" ? content : new Uint8Array(content)], type ? { type } : {}), name);
  }
  return fetch(`${baseUrl}/api/threads/${threadId}/uploads`, { method: "POST", body: form });
}
