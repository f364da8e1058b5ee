// The Feishu long connection across two real gateway processes sharing one DEER_FLOW_HOME (channels.sqlite: the
// lease and the dedupe store): one process holds the socket; when it stops, the other takes the connection over and
// answers the next message; every event is answered once.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { feishuText, startFeishuFake, type FeishuFake } from "../support/fakes/feishu.js";
import { attachLongConnection, type FeishuLongConnectionFake } from "../support/fakes/feishu-ws.js";
import { freePort, PROCESS_HOOK_MS, PROCESS_START_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { until } from "../support/wait.js";

let dir: string;
let fs: FeishuFake;
let lc: FeishuLongConnectionFake;
let env: Record<string, string>;
const procs: GatewayProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-feishu-two-"));
  fs = await startFeishuFake("cli_0123456789abcdef", "secret");
  lc = await attachLongConnection(fs, { pingIntervalS: 120 });
  const yaml = `models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\nchannels:\n  feishu:\n    enabled: true\n    app_id: ${fs.appId}\n    app_secret: ${fs.appSecret}\n    domain: ${fs.url}\n    stream_edit_interval_ms: 30\n`;
  writeFileSync(path.join(dir, "config.yaml"), yaml);
  env = { DEER_FLOW_CONFIG_PATH: path.join(dir, "config.yaml"), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), DEER_FLOW_AUTH_DISABLED: "1", AUTH_JWT_SECRET: "" };
}, PROCESS_HOOK_MS);
afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop("SIGKILL")));
  await lc?.close();
  await fs?.close();
  rmSync(dir, { recursive: true, force: true });
});

const answered = (eventId: string) => fs.sent.filter((s) => s.reply_to === `om_in_${eventId}`);

describe("Feishu long connection across two processes", () => {
  it("is held by one process and taken over by the other when the holder stops; each event is answered once", async () => {
    const first = await startGateway(await freePort(), env);
    procs.push(first);
    await until(() => lc.connections() === 1, 30_000);
    const second = await startGateway(await freePort(), env);
    procs.push(second);
    lc.push(feishuText("ev-a", "ou_p", "held by the first"));
    lc.push(feishuText("ev-a", "ou_p", "held by the first"));
    await until(() => answered("ev-a").at(-1)?.texts.at(-1) === "You said: held by the first", 30_000);
    expect(lc.opened).toBe(1);
    expect(lc.endpointCalls).toHaveLength(1);

    await first.stop("SIGTERM");
    await until(() => lc.opened === 2 && lc.connections() === 1, 30_000);
    lc.push(feishuText("ev-b", "ou_p", "taken over"));
    await until(() => answered("ev-b").at(-1)?.texts.at(-1) === "You said: taken over", 30_000);
    expect(answered("ev-a")).toHaveLength(1);
    expect(answered("ev-b")).toHaveLength(1);
  }, PROCESS_START_MS * 2 + 60_000);
});
