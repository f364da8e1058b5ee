import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetAppConfig } from "../../src/config/app-config.js";
import { aioSandboxId } from "../../src/sandbox/aio-provider.js";
import { signUp } from "../support/auth-client.js";
import { startFakeAioSandbox, type FakeAioSandbox } from "../support/fakes/aio-sandbox.js";
import { buildTestApp, startHarness, type Harness } from "../support/harness.js";

// Issue 45 item 2: sandbox providers this gateway does not offer stop the start with a message naming them and
// what is offered (never the silent fallback to the local provider of before); two users' threads get their own
// sandboxes from the provisioner.
const MODEL = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const ENV_KEYS = ["DEER_FLOW_CONFIG_PATH", "DEER_FLOW_HOME", "DEER_FLOW_AGENTS_DIR"] as const;

/** Starts the app on a temp project with `sandboxYaml` and returns the start's error message (or "started"). */
async function startError(sandboxYaml: string): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-aio-cfg-"));
  const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  writeFileSync(path.join(dir, "config.yaml"), MODEL + sandboxYaml);
  process.env.DEER_FLOW_CONFIG_PATH = path.join(dir, "config.yaml");
  process.env.DEER_FLOW_HOME = path.join(dir, ".deer-flow");
  process.env.DEER_FLOW_AGENTS_DIR = path.join(dir, "agents");
  resetAppConfig();
  try {
    const app = await buildTestApp();
    await app.close();
    return "started";
  } catch (err) {
    return (err as Error).message;
  } finally {
    resetAppConfig();
    for (const k of ENV_KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("sandbox.use providers that are not offered stop the start", () => {
  it.each([
    ["e2b", "deerflow.community.e2b_sandbox:E2BSandboxProvider", /E2B cloud sandboxes .* not offered/],
    ["boxlite", "deerflow.community.boxlite:BoxliteProvider", /BoxLite micro-VMs .* not offered/],
    ["tenki", "deerflow.community.tenki:TenkiSandboxProvider", /Tenki cloud microVMs .* not offered/],
    ["an unknown one", "my.module:MySandbox", /'my\.module:MySandbox' is not a sandbox provider this gateway knows/],
  ])("%s", async (_label, use, pattern) => {
    const message = await startError(`sandbox:\n  use: ${use}\n`);
    expect(message).toContain(`sandbox.use '${use}'`);
    expect(message).toMatch(pattern);
    expect(message).toContain("Offered: deerflow.sandbox.local:LocalSandboxProvider");
  });

  it("aio_sandbox without base_url or provisioner_url (the Docker-managed local backend)", async () => {
    const message = await startError("sandbox:\n  use: deerflow.community.aio_sandbox:AioSandboxProvider\n  image: all-in-one-sandbox:1.11.0\n");
    expect(message).toMatch(/Docker-managed local container backend.*does not offer.*sandbox\.base_url/);
  });

  it("while the local provider and aio_sandbox with a base_url start", async () => {
    expect(await startError("sandbox:\n  use: deerflow.sandbox.local:LocalSandboxProvider\n")).toBe("started");
    expect(await startError("sandbox:\n  use: deerflow.community.aio_sandbox:AioSandboxProvider\n  base_url: http://127.0.0.1:9\n")).toBe("started");
  });
});

describe("two users", () => {
  let fake: FakeAioSandbox;
  let h: Harness;
  beforeAll(async () => {
    fake = await startFakeAioSandbox();
    h = await startHarness(
      MODEL +
        `sandbox:\n  use: deerflow.community.aio_sandbox:AioSandboxProvider\n  provisioner_url: ${fake.url}\n` +
        "tool_groups:\n  - name: sandbox\ntools:\n  - name: bash\n    group: sandbox\n    use: deerflow.sandbox.tools:bash_tool\n",
      { authDisabled: false },
    );
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  it("get different sandboxes, and neither sees the other's files", async () => {
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    const bob = await signUp(h.url, "bob@example.com", "correct horse battery");
    const bash = async (who: typeof alice, thread: string, command: string) => {
      expect((await who.fetch("/threads", { json: { thread_id: thread } })).status).toBe(200);
      const res = await who.fetch(`/threads/${thread}/runs/wait`, { json: { input: { messages: [{ role: "user", content: `!call bash ${JSON.stringify({ command })}` }] } } });
      const values = await res.json();
      return String(values.messages.filter((m: { type: string }) => m.type === "tool").at(-1)?.content);
    };
    expect(await bash(alice, "a-thread", "echo alice-secret > /mnt/user-data/workspace/s.txt; echo ok")).toBe("ok");
    expect(await bash(bob, "b-thread", "cat /mnt/user-data/workspace/s.txt 2>&1; ls /mnt/user-data/workspace | wc -l")).toMatch(/No such file[\s\S]*\n0$/);
    const users = new Set(fake.created.map((c) => c.user_id));
    expect(users.size).toBe(2);
    expect(new Set(fake.created.map((c) => c.sandbox_id)).size).toBe(2);
    const aliceCreated = fake.created.find((c) => c.thread_id === "a-thread")!;
    expect(aliceCreated.sandbox_id).toBe(aioSandboxId(aliceCreated.user_id, "a-thread"));
  });
});
