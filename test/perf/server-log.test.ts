// The server installs its speed patches as DEER_FLOW_PERF_PATCHES says and logs, in one line, what each one is.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { until } from "../support/wait.js";

let dir: string;
let gateway: GatewayProcess | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("the server's speed patches", () => {
  it("are logged at start in one line, with the ones DEER_FLOW_PERF_PATCHES leaves out shown off", async () => {
    dir = mkdtempSync(path.join(tmpdir(), "perf-log-"));
    const config = path.join(dir, "config.yaml");
    writeFileSync(config, "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
    gateway = await startGateway(await freePort(), { DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, "home"), LOG_LEVEL: "info", DEER_FLOW_PERF_PATCHES: "-pregel-stream" });
    const g = gateway;
    await until(async () => g.output().includes('"msg":"performance patches"'), 10_000, 20);
    const lines = g.output().split("\n").filter((l) => l.includes('"msg":"performance patches"'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]).perf_patches).toEqual({ "callback-copy": "on", "runnable-scope": "on", "pregel-stream": "off", "model-call-chain": "on" });
    // A real server process: its start-up (tsx, the whole app) is slow on a loaded 2-core machine.
  }, 90_000);
});
