import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExtensionsConfigSchema } from "../../src/config/extensions-config.js";
import { closeMcpClients, McpToolCache } from "../../src/tools/mcp-tools.js";
import { startStatefulMcpFake, type StatefulMcpFake } from "../support/fakes/mcp-stateful.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";
import { until } from "../support/wait.js";

// Issue 49 item 2: session pooling (upstream mcp/session_pool.py). A stateful MCP server keeps one session per
// (user, thread): the second call of a thread sees the first call's state, another thread (or user) its own
// session; idle sessions close, the pool is bounded, and shutdown closes every session. Real MCP SDK servers: the
// stdio fixture (a session is a process; `count` answers `<pid>:<n>`) and a streamable HTTP server with
// `Mcp-Session-Id` (`count` answers `<session id>:<n>`).
const SERVER = path.resolve("test/tools/fixtures/mcp-echo-server.mjs");
const stdio = { type: "stdio", command: process.execPath, args: [SERVER], env: { ECHO_COUNT: "1" } };
const ENV = "DEER_FLOW_EXTENSIONS_CONFIG_PATH";
const MODEL = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let fake: StatefulMcpFake;

beforeAll(async () => {
  fake = await startStatefulMcpFake();
});
afterAll(async () => {
  await fake.close();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("over HTTP: one session per thread", () => {
  const saved = process.env[ENV];
  let work: string;
  let h: Harness;
  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), "mcp-pool-"));
    writeFileSync(path.join(work, "extensions_config.json"), JSON.stringify({ mcpServers: { proc: stdio, web: { type: "http", url: fake.url } } }));
    process.env[ENV] = path.join(work, "extensions_config.json");
    h = await startHarness(MODEL);
  });
  afterAll(async () => {
    await h.close();
    await closeMcpClients();
    if (saved === undefined) delete process.env[ENV];
    else process.env[ENV] = saved;
    rmSync(work, { recursive: true, force: true });
  });

  const newThread = async () => (await (await postJson(`${h.url}/threads`, {})).json()).thread_id as string;
  async function count(threadId: string, tool: string): Promise<[string, number]> {
    const res = await postJson(`${h.url}/threads/${threadId}/runs/stream`, { input: { messages: [{ role: "user", content: `!call ${tool} {}` }] }, stream_mode: ["values"] });
    const messages = (parseSse(await res.text()).frames.filter((f) => f.event === "values").at(-1)!.data as { messages: { type: string; content: unknown }[] }).messages;
    const out = String([...messages].reverse().find((m) => m.type === "tool")?.content);
    const m = /([\w-]+):(\d+)/.exec(out);
    expect(m, out).not.toBeNull();
    return [m![1], Number(m![2])];
  }

  it.each([["stdio", "proc_count"], ["streamable HTTP", "web_count"]])("keeps a %s server's session across the turns of a thread, and gives another thread its own", async (_kind, tool) => {
    const [a, b] = [await newThread(), await newThread()];
    const [sessionA, first] = await count(a, tool);
    const [again, second] = await count(a, tool);
    expect([again, second]).toEqual([sessionA, first + 1]);
    const [sessionB, firstB] = await count(b, tool);
    expect(sessionB).not.toBe(sessionA);
    expect(firstB).toBe(1);
    expect((await count(a, tool))).toEqual([sessionA, first + 2]);
  });
});

describe("the pool's bounds", () => {
  type Tool = { name: string; invoke(input: unknown, config?: unknown): Promise<unknown> };
  const call = async (cache: McpToolCache, user: string, thread: string): Promise<[number, number]> => {
    const tool = ((await cache.getTools(ExtensionsConfigSchema.parse({ mcpServers: { proc: stdio } }))) as unknown as Tool[]).find((t) => t.name === "proc_count")!;
    const out = JSON.stringify(await tool.invoke({}, { configurable: { thread_id: thread, user_id: user } }));
    const m = /(\d+):(\d+)/.exec(out)!;
    return [Number(m[1]), Number(m[2])];
  };

  it("scopes by user and thread: the same thread id of another user gets its own session", async () => {
    const cache = new McpToolCache();
    try {
      const [pidA] = await call(cache, "alice", "t1");
      const [pidB, n] = await call(cache, "bob", "t1");
      expect(pidB).not.toBe(pidA);
      expect(n).toBe(1);
      expect(cache.pool.size).toBe(2);
    } finally {
      await cache.close();
    }
  });

  it("closes a session idle past the idle time; the next call of the thread starts a fresh one", async () => {
    const clock = { now: 1_000_000 };
    const cache = new McpToolCache(() => clock.now, { idleMs: 60_000 });
    try {
      const [pid, n] = await call(cache, "u", "t");
      expect(await call(cache, "u", "t")).toEqual([pid, n + 1]);
      clock.now += 61_000;
      cache.pool.sweep();
      await until(() => !alive(pid));
      const [fresh, m] = await call(cache, "u", "t");
      expect(fresh).not.toBe(pid);
      expect(m).toBe(1);
    } finally {
      await cache.close();
    }
  });

  it("keeps at most maxSessions, closing the least recently used", async () => {
    const cache = new McpToolCache(Date.now, { maxSessions: 2 });
    try {
      const [p1] = await call(cache, "u", "t1");
      const [p2] = await call(cache, "u", "t2");
      await call(cache, "u", "t1"); // t2 is now the least recently used
      const [p3] = await call(cache, "u", "t3");
      expect(cache.pool.size).toBe(2);
      await until(() => !alive(p2));
      expect(alive(p1) && alive(p3)).toBe(true);
    } finally {
      await cache.close();
    }
  });

  it("closes every session on shutdown", async () => {
    const cache = new McpToolCache();
    const pids = [(await call(cache, "u", "x1"))[0], (await call(cache, "u", "x2"))[0]];
    await cache.close();
    expect(cache.pool.size).toBe(0);
    await until(() => pids.every((p) => !alive(p)));
  });
});
