import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres.js";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.js";
import { testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

// Liveness and readiness of a gateway process on a PostgreSQL and a Redis of this test's own, each stopped and
// started again: /healthz and /health stay 200 (the process is fine), /readyz answers 503 naming the store that is
// down (no host, port or credential) and 200 again once it is back (docs/operations.md, "Health and readiness").
let dir: string;
let db: PrivatePostgres | undefined;
let redis: PrivateRedis | undefined;
let gateway: GatewayProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-ready-"));
  [db, redis] = await Promise.all([startPrivatePostgres(dir), startPrivateRedis(dir)]);
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    `models:\n  - {name: fast, use: "deerflow-gateway:ScriptedChatModel", model: fast}\ntitle: {enabled: false}\ndatabase:\n  backend: postgres\n  url: ${db.url}\nstream_bridge:\n  type: redis\n  url: ${redis.url}\n  key_prefix: "${testPrefix()}"\n  lease_ms: 20000\n`,
  );
  gateway = await startGateway(await freePort(), { DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") });
}, PROCESS_HOOK_MS);

afterAll(async () => {
  await gateway?.stop("SIGKILL");
  await redis?.stop();
  try {
    db?.stop();
  } catch {
    // already stopped
  }
  rmSync(dir, { recursive: true, force: true });
});

const get = async (p: string) => {
  const res = await fetch(`${gateway!.url}${p}`);
  return { status: res.status, retryAfter: res.headers.get("retry-after"), text: await res.text() };
};

async function expectAlive(): Promise<void> {
  expect(await get("/healthz")).toMatchObject({ status: 200, text: JSON.stringify({ status: "ok" }) });
  const health = await get("/health");
  expect(health.status).toBe(200);
  expect(JSON.parse(health.text).status).toBe("healthy");
}

describe("readiness while a store is down", () => {
  it(
    "/readyz fails with the store that is down while liveness stays 200, and recovers without a restart",
    async () => {
      expect(JSON.parse((await get("/readyz")).text)).toEqual({ status: "ready", checks: { database: "up", redis: "up" } });
      await expectAlive();

      db!.stop();
      const down = await get("/readyz");
      expect(down).toMatchObject({ status: 503, retryAfter: "1" });
      expect(JSON.parse(down.text)).toEqual({ status: "not_ready", checks: { database: "down", redis: "up" }, detail: "PostgreSQL unavailable" });
      // Nothing about where the store lives.
      expect(down.text).not.toMatch(/127\.0\.0\.1|postgres:\/\/|ECONNREFUSED|:\d{4,5}/);
      await expectAlive();
      db!.start();
      await until(async () => (await get("/readyz")).status === 200, 30_000, 200);

      await redis!.stop();
      const noRedis = await get("/readyz");
      expect(noRedis.status).toBe(503);
      expect(JSON.parse(noRedis.text)).toEqual({ status: "not_ready", checks: { database: "up", redis: "down" }, detail: "Redis unavailable" });
      await expectAlive();
      // A request that needs Redis (admitting a run) fails clearly meanwhile.
      const run = await fetch(`${gateway!.url}/runs/wait`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: { messages: [{ role: "user", content: "hi" }] } }) });
      expect(run.status).toBe(503);
      expect(await run.json()).toEqual({ detail: "The gateway's database or Redis is unavailable; retry shortly" });
      await redis!.start();
      await until(async () => (await get("/readyz")).status === 200, 30_000, 200);
      expect(JSON.parse((await get("/readyz")).text)).toEqual({ status: "ready", checks: { database: "up", redis: "up" } });
      expect(gateway!.child.exitCode).toBeNull();
    },
    PROCESS_HOOK_MS,
  );
});
