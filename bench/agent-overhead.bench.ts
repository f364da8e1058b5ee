// What the DeerFlow lead agent costs per run over a bare `createAgent`, in one process with no HTTP: the budget
// issue 16's goals leave the gateway. Every variant streams one user turn with the stream modes the gateway uses
// (`values` + `messages`), building its agent per run as the gateway and anchor C of bench-anchors do.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { MemorySaver } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { createAgent } from "langchain";
import { makeLeadAgent } from "../src/agents/lead-agent/agent.js";
import { buildMemoryManager } from "../src/agents/memory/build-manager.js";
import type { MemoryManager } from "../src/agents/memory/manager.js";
import { buildRunContext } from "../src/agents/run-context.js";
import { loadAppConfig, setAppConfig } from "../src/config/app-config.js";
import { parseAppConfig, type AppConfig } from "../src/config/schema.js";
import { ScriptedChatModel } from "../src/models/scripted-chat-model.js";
import { installPerfPatches } from "../src/perf/patches.js";
import { GroupCommitSqliteSaver } from "../src/runtime/persistence/sqlite/group-commit-saver.js";
import { WAL_AUTOCHECKPOINT_PAGES } from "../src/runtime/persistence/persistence.js";
import { openSqlite } from "../src/runtime/persistence/sqlite/sqlite.js";
import { withStatementCache } from "../src/runtime/persistence/sqlite/statement-cache.js";
import { summarize, type BenchSuite } from "./stats.js";

/** Runs per variant and round; rounds interleave the variants so a slow stretch of the host hits all of them. */
const RUNS_PER_ROUND = 200;
const ROUNDS = 7;
const WARMUP_RUNS = 100;
const STREAM_MODES = ["values", "messages"];
/** Runs in flight at once in the concurrent rows: bench-anchors' C=64. */
const CONCURRENCY = 64;

/** One way of running a user turn; `run(i)` streams run number `i` to its end, `concurrency` of them at once. */
interface Variant {
  name: string;
  run(i: number): Promise<void>;
  concurrency?: number;
}

/** Runs `count` runs of `variant`, numbered from `first`, keeping its concurrency in flight. */
async function runMany(variant: Variant, first: number, count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await variant.run(first + next++);
  };
  await Promise.all(Array.from({ length: Math.min(variant.concurrency ?? 1, count) }, worker));
}

/** The shipped config with the scripted model streaming without pauses, plus `patch` (top-level sections). */
function shippedConfig(patch: Record<string, unknown> = {}): AppConfig {
  process.env.OPENAI_API_KEY ??= "";
  process.env.OPENAI_BASE_URL ||= "https://api.openai.com/v1";
  const base = loadAppConfig(fileURLToPath(new URL("../config/config.yaml", import.meta.url)));
  return parseAppConfig({ ...base, models: base.models.map((m) => (m.use === "deerflow-gateway:ScriptedChatModel" ? { ...m, token_delay_ms: 0 } : m)), ...patch });
}

/** Streams `graph` on one user message to the end. */
async function drain(graph: { stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<unknown>> }, options: Record<string, unknown>): Promise<void> {
  for await (const chunk of await graph.stream({ messages: [{ role: "user", content: "hi" }] }, { ...options, streamMode: STREAM_MODES })) void chunk;
}

/** The lead agent as the worker runs it: the run context of `buildRunContext`, the compiled graph streamed. */
function leadAgent(name: string, appConfig: AppConfig, memoryManager: MemoryManager, saver: () => BaseCheckpointSaver): Variant {
  return {
    name,
    async run(i) {
      setAppConfig(appConfig);
      const threadId = `overhead-${name.replace(/[^a-z]/g, "")}-${i}`;
      const context = buildRunContext({ threadId, runId: `run-${i}`, userId: "bench", appConfig, memoryManager });
      const agent = await makeLeadAgent({ configurable: { thread_id: threadId }, context });
      agent.checkpointer = saver();
      const graph = ((agent as { graph?: unknown }).graph ?? agent) as Parameters<typeof drain>[0];
      await drain(graph, { configurable: { thread_id: threadId }, context, recursionLimit: 100 });
    },
  };
}

/** CPU time (user + system) of `fn`, in ms. */
async function cpuMs(fn: () => Promise<void>): Promise<number> {
  const start = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/**
 * Per-run CPU (ms, user + system of this process, GC included) of: a bare `createAgent` (the scripted model, no
 * tools, a MemorySaver: bench-anchors' anchor C); the lead agent with the shipped config; the same without its
 * title call and memory; the lead agent on a SQLite checkpointer file, as the gateway stores runs; and, with
 * {@link CONCURRENCY} runs in flight, the lead agent on upstream's `SqliteSaver` and on the gateway's group-commit
 * saver. Each row's samples are the rounds' CPU per run ({@link ROUNDS} rounds of {@link RUNS_PER_ROUND} runs,
 * interleaved). Applies the server's speed patches ({@link installPerfPatches}) first.
 */
export async function runAgentOverheadBench(): Promise<BenchSuite> {
  // The server's process patches (no result changes; they cut LangSmith placeholders and copies every agent pays),
  // so the rows cost what they cost in the gateway. They stay in place for the suites after this one.
  const tuned = installPerfPatches();
  const home = mkdtempSync(path.join(tmpdir(), "deerflow-overhead-"));
  const full = shippedConfig();
  const lean = shippedConfig({ title: { enabled: false }, memory: { enabled: false } });
  const memoryManager = await buildMemoryManager(full.memory, () => full, process.cwd(), home);
  // As the gateway opens its checkpointer (persistence.ts): its WAL interval, prepared statements reused, group
  // commit; and upstream's saver on the same settings, to show what group commit changes with runs in flight.
  const open = (name: string) => openSqlite(path.join(home, name), { walAutocheckpointPages: WAL_AUTOCHECKPOINT_PAGES });
  const dbs = [open("gateway.sqlite"), open("upstream.sqlite"), open("concurrent.sqlite")];
  const gatewaySaver = new GroupCommitSqliteSaver(withStatementCache(dbs[0]));
  const upstreamSaver = new SqliteSaver(withStatementCache(dbs[1]));
  const concurrentSaver = new GroupCommitSqliteSaver(withStatementCache(dbs[2]));
  const variants: Variant[] = [
    {
      name: "bare createAgent (anchor C's agent)",
      async run(i) {
        const agent = createAgent({ model: new ScriptedChatModel(), tools: [], checkpointer: new MemorySaver() });
        await drain(agent as unknown as Parameters<typeof drain>[0], { configurable: { thread_id: `bare-${i}` } });
      },
    },
    leadAgent("lead agent, no title, no memory", lean, memoryManager, () => new MemorySaver()),
    leadAgent("lead agent (shipped config)", full, memoryManager, () => new MemorySaver()),
    leadAgent("lead agent, SQLite checkpoints", full, memoryManager, () => gatewaySaver),
    { ...leadAgent("lead agent, 64 in flight, upstream SqliteSaver", full, memoryManager, () => upstreamSaver), concurrency: CONCURRENCY },
    { ...leadAgent("lead agent, 64 in flight, group commit", full, memoryManager, () => concurrentSaver), concurrency: CONCURRENCY },
  ];
  const perRun = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  try {
    for (const v of variants) await runMany(v, -WARMUP_RUNS, WARMUP_RUNS);
    let next = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of variants) {
        const ms = await cpuMs(() => runMany(v, next, RUNS_PER_ROUND));
        next += RUNS_PER_ROUND;
        perRun.get(v.name)!.push(ms / RUNS_PER_ROUND);
      }
    }
  } finally {
    await memoryManager.shutdownFlush(0).catch(() => undefined);
    for (const db of dbs) db.close();
    rmSync(home, { recursive: true, force: true });
  }
  const bare = summarize(perRun.get(variants[0].name)!).p50;
  return {
    results: variants.map((v) => ({ name: `${v.name}: CPU ms per run`, samples: perRun.get(v.name)! })),
    notes: [
      `rows: CPU per run of each of ${ROUNDS} interleaved rounds of ${RUNS_PER_ROUND} runs (${WARMUP_RUNS} warm-up runs per variant first); one process, no HTTP, runs one at a time unless ${CONCURRENCY} are in flight`,
      `group commit with ${CONCURRENCY} runs in flight: ${(summarize(perRun.get(variants[5].name)!).p50 / summarize(perRun.get(variants[4].name)!).p50).toFixed(2)}x upstream SqliteSaver's CPU per run (p50 / p50)`,
      ...variants.slice(1).map((v) => `${v.name}: ${(summarize(perRun.get(v.name)!).p50 / bare).toFixed(2)}x the bare createAgent (p50 / p50)`),
      `speed patches as in the server: ${Object.entries(tuned).map(([k, v]) => `${k} ${v}`).join(", ")}`,
      "issue 16 asks the whole gateway (HTTP, SSE, SQLite, this agent) for <= 2x the bare agent's CPU per run, aiming for 1.3x",
    ],
  };
}
