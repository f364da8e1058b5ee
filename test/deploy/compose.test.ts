import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { clusterProblem } from "../../src/cluster.js";
import { parseAppConfigText } from "../../src/config/app-config.js";
import { readServerEnv } from "../../src/config/server-env.js";

// deploy/compose.yaml cannot be started here (no Docker daemon): its syntax, topology and wiring are checked
// against the code that reads them. The same topology runs for real in test/scale/ (processes on PostgreSQL + Redis).
const root = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");
const compose = parse(read("deploy/compose.yaml"));
const gateway = compose.services.gateway;
const seconds = (duration: string) => Number(/^(\d+)s$/.exec(duration)?.[1]);
/** The directories the image declares as volumes (its data: config, agents, runtime data). */
const imageVolumes = (JSON.parse(/^VOLUME (\[.*\])$/m.exec(read("Dockerfile"))![1]) as string[]).filter((v) => v !== "/app/config");

describe("deploy/compose.yaml", () => {
  it("runs gateways on PostgreSQL and Redis, each service with a health check, the gateways after both are healthy", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["gateway", "postgres", "redis"]);
    for (const service of Object.values(compose.services) as { healthcheck?: { test: unknown } }[]) expect(service.healthcheck?.test).toBeTruthy();
    expect(gateway.depends_on).toEqual({ postgres: { condition: "service_healthy" }, redis: { condition: "service_healthy" } });
    expect(gateway.healthcheck.test.join(" ")).toContain("/readyz");
  });

  it("gives docker more time than the gateway's shutdown grace, the hand-over and the close take", () => {
    const grace = readServerEnv(gateway.environment).shutdownGraceMs / 1000;
    expect(grace).toBe(60);
    // src/server.ts exits by itself at the latest grace + 15 s; docker's SIGKILL must not come first.
    expect(seconds(gateway.stop_grace_period)).toBeGreaterThanOrEqual(grace + 15);
  });

  it("mounts every data directory of the image on a named volume shared by the gateways", () => {
    const mounts = new Map((gateway.volumes as string[]).map((v) => [v.split(":")[1], v.split(":")[0]]));
    for (const dir of imageVolumes) expect(compose.volumes).toHaveProperty(mounts.get(dir)!);
  });

  it("its config.yaml is valid and shares runs between processes (what WORKERS=N requires)", () => {
    const env = { DATABASE_URL: "postgres://u:p@db:5432/d", REDIS_URL: "redis://r:6379/0" };
    const config = parseAppConfigText(read("deploy/config.yaml"), "deploy/config.yaml", env);
    expect(clusterProblem(config, 2)).toBeNull();
    expect(config.stream_bridge?.max_resumes).toBe(3);
    expect(gateway.environment.DEER_FLOW_CONFIG_PATH).toBe(gateway.volumes.find((v: string) => v.startsWith("./config.yaml:")).split(":")[1]);
  });
});

describe("the documented docker run", () => {
  it("mounts the config and every data directory of the image", () => {
    const line = /^docker build .* && (docker run .*)$/m.exec(read("docs/development.md"))![1];
    const targets = [...line.matchAll(/-v (\S+)/g)].map((m) => m[1].split(":")[1]);
    expect(targets).toEqual(expect.arrayContaining(["/app/config", ...imageVolumes]));
  });
});
