// Issue 42 items 1-2: nothing a user controls may run unbounded on the shared event loop. Each attack goes through
// the real HTTP entry points with sign-in on, while a worker thread polls GET /health. The slowest answer during the
// attack may exceed the slowest answer during the same requests with benign input by at most 1 s: on an idle
// host the benign worst is a few ms, while on a loaded 2-core host an ordinary run alone can delay /health by
// hundreds of ms, which says nothing about the input. Unbounded work stalls for seconds to hours (the grep pattern
// below backtracks 2^40 times unguarded), far past either: this is a freeze guard, not a latency measurement.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { watchHealth } from "../support/event-loop-watch.js";
import { startHarness, type Harness } from "../support/harness.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\nsandbox:\n  use: deerflow.sandbox.local:LocalSandboxProvider\n" +
  "tools:\n  - name: grep\n    group: file:read\n    use: deerflow.sandbox.tools:grep_tool\n";
/** How much longer /health may wait during an attack than during the same requests with benign input. */
const HEALTH_BUDGET_MS = 1000;

let h: Harness;
let alice: Session;
beforeAll(async () => {
  h = await startHarness(CONFIG, { authDisabled: false });
  alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  // The first run of a process loads modules and builds caches: a one-time cost the watches must not measure.
  await run("warm-up", "hello");
});
afterAll(async () => h.close());

/** The slowest /health answer (ms) during `benign`, the worst of two tries. */
async function baseline(benign: () => Promise<void>): Promise<number> {
  return Math.max(await worstHealthDuring(benign), await worstHealthDuring(benign));
}

/** Runs `attack` while /health is watched; returns the slowest /health answer (ms). */
async function worstHealthDuring(attack: () => Promise<void>): Promise<number> {
  const watch = await watchHealth(h.url);
  try {
    await attack();
  } finally {
    var report = await watch.stop();
  }
  expect(report.probes).toBeGreaterThan(0);
  return report.worstMs;
}

const run = async (thread: string, content: string) => {
  expect((await alice.fetch("/threads", { json: { thread_id: thread, if_exists: "do_nothing" } })).status).toBe(200);
  const res = await alice.fetch(`/threads/${thread}/runs/wait`, { json: { input: { messages: [{ role: "user", content }] } } });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json();
};

describe("the event loop stays responsive under user-controlled input", () => {
  it("imports a memory whose summaries are each one 100,000-character word, then runs with it injected", async () => {
    const section = (summary: string) => ({ summary, updatedAt: "" });
    const importAndRun = (summary: (c: string) => string, thread: string) => async () => {
      const imported = await alice.fetch("/api/memory/import", { json: { user: { workContext: section(summary("a")), personalContext: section(summary(" ")), topOfMind: section(summary("!")) }, history: { recentMonths: section(summary("c")) }, facts: [] } });
      expect(imported.status, await imported.clone().text()).toBe(200);
      await run(thread, "hello");
    };
    // Benign: the same size in ordinary words, as many tokens to count.
    const benign = await baseline(importAndRun((c) => `${c.trim() || "w"}ord `.repeat(20_000), "memory-benign"));
    const worst = await worstHealthDuring(importAndRun((c) => c.repeat(100_000), "memory-attack"));
    console.log(`memory import + run: worst /health ${worst.toFixed(0)} ms (benign ${benign.toFixed(0)} ms)`);
    expect(worst).toBeLessThan(benign + HEALTH_BUDGET_MS);
  });

  it("greps an uploaded file with a catastrophic pattern", async () => {
    expect((await alice.fetch("/threads", { json: { thread_id: "grep-attack" } })).status).toBe(200);
    const form = new FormData();
    form.append("files", new Blob([`${"a".repeat(40)}!\n`.repeat(50)]), "evil.txt");
    expect((await alice.fetch("/api/threads/grep-attack/uploads", { method: "POST", body: form })).status).toBe(200);
    let reply: any;
    const grep = (pattern: string) => async () => {
      reply = await run("grep-attack", `!call grep ${JSON.stringify({ description: "x", pattern, path: "/mnt/user-data/uploads/evil.txt" })}`);
    };
    const benign = await baseline(grep("a+$"));
    const worst = await worstHealthDuring(grep("(a+)+$"));
    console.log(`grep (a+)+$: worst /health ${worst.toFixed(0)} ms (benign ${benign.toFixed(0)} ms)`);
    const tools = reply.messages.filter((m: { type: string }) => m.type === "tool");
    expect(tools.at(-1)?.content, JSON.stringify(reply.messages).slice(0, 600)).toBe("No matches found under /mnt/user-data/uploads/evil.txt");
    expect(worst).toBeLessThan(benign + HEALTH_BUDGET_MS);
  });
});
