import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres.js";
import { serviceUrls, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

// Two gateway processes on a PostgreSQL of this test's own (and the shared Redis): while the database is down,
// requests that need it answer 503 {detail} naming no host or driver; once it is back, both processes serve again
// without a restart (docs/durable-runs.md, "Database or Redis down").
let dir: string;
let db: PrivatePostgres | undefined;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-pgdown-"));
  db = await startPrivatePostgres(dir);
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    `models:\n  - {name: fast, use: "deerflow-gateway:ScriptedChatModel", model: fast}\ntitle: {enabled: false}\ndatabase:\n  backend: postgres\n  url: ${db.url}\nstream_bridge:\n  type: redis\n  url: ${serviceUrls().redisUrl}\n  key_prefix: "${testPrefix()}"\n  lease_ms: 3000\n`,
  );
  const env = (n: number) => ({ DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, `home-${n}`), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") });
  gateways.push(...(await Promise.all([startGateway(await freePort(), env(1)), startGateway(await freePort(), env(2))])));
}, PROCESS_HOOK_MS);

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop("SIGKILL")));
  try {
    db?.stop();
  } catch {
    // already stopped
  }
  rmSync(dir, { recursive: true, force: true });
});

const post = (url: string, body: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const ask = (url: string, content: string) => post(`${url}/runs/wait`, { input: { messages: [{ role: "user", content }] } });

describe("PostgreSQL restarted under two gateway processes", () => {
  it(
    "answers 503 {detail} while it is down and recovers without a restart",
    async () => {
      const [a, b] = gateways;
      const thread = (await (await post(`${a.url}/threads`, {})).json()).thread_id;
      expect((await fetch(`${b.url}/threads/${thread}`)).status).toBe(200);

      db!.stop();
      for (const g of gateways) {
        for (const res of [await fetch(`${g.url}/threads/${thread}`), await post(`${g.url}/threads`, {}), await ask(g.url, "while down")]) {
          expect(res.status).toBe(503);
          expect(res.headers.get("retry-after")).toBe("1");
          const body = await res.json();
          expect(body).toEqual({ detail: "The gateway's database or Redis is unavailable; retry shortly" });
        }
      }

      db!.start();
      // Both processes serve again: reads, writes and whole runs, with no restart.
      for (const g of gateways) await until(async () => (await fetch(`${g.url}/threads/${thread}`)).status === 200, 30_000, 200);
      const created = await post(`${b.url}/threads`, {});
      expect(created.status).toBe(200);
      const answer = await (await ask(a.url, "back again")).json();
      expect(answer.messages.at(-1).content).toBe("You said: back again");
      expect(a.output()).not.toMatch(/unhandled error/);
    },
    PROCESS_HOOK_MS,
  );
});
