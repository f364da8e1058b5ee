// Cost of the SDK layer with every feature on (spec/agent-factory.md section 1): createDeerflowAgent alone, the
// first superstep of a run, and a whole first run, with a zero-latency model.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import type { ToolCallHandler } from "langchain";
import { createDeerflowAgent, type DeerflowAgent } from "../src/agents/factory.js";
import { DeerMemManager } from "../src/agents/memory/deermem-manager.js";
import { parseAppConfig } from "../src/config/schema.js";
import { DeerflowMiddleware } from "../src/agents/middlewares/base.js";
import { MemoryMiddleware } from "../src/agents/middlewares/memory.js";
import { SummarizationMiddleware } from "../src/agents/middlewares/summarization.js";
import { ScriptedChatModel } from "../src/models/scripted-chat-model.js";
import { measure, type BenchSuite } from "./stats.js";

const BUILD_WARMUP = 50;
const BUILD_ITERATIONS = 500;
const RUN_WARMUP = 20;
const RUN_ITERATIONS = 200;
const RECURSION_LIMIT = 100;

/** The custom guardrail slot's occupant: a pass-through tool-call wrapper, as a real policy check would be. */
class BenchGuardrail extends DeerflowMiddleware {
  readonly name = "BenchGuardrail";
  wrapToolCall(request: Parameters<ToolCallHandler>[0], handler: ToolCallHandler) {
    return handler(request);
  }
}

/**
 * Every feature on: sandbox group, memory, custom summarization and guardrail, subagent, vision, title, plan mode,
 * loop detection, token budget. Memory is the built-in MemoryMiddleware class given one shared default backend; its
 * extraction (a model call per batch) is not part of the chain's cost, so the pending turns are dropped at the end.
 */
function buildAll(model: ScriptedChatModel, manager: DeerMemManager): DeerflowAgent {
  return createDeerflowAgent(model, null, {
    features: {
      sandbox: true,
      memory: new MemoryMiddleware({ manager }),
      summarization: new SummarizationMiddleware({ model, trigger: { type: "tokens", value: 100_000 } }),
      subagent: true,
      vision: true,
      autoTitle: true,
      guardrail: new BenchGuardrail(),
      loopDetection: true,
      tokenBudget: true,
    },
    planMode: true,
  });
}

const runConfig = (i: number) => ({
  configurable: { thread_id: `bench-${i}` },
  context: { thread_id: `bench-${i}`, run_id: `run-${i}`, user_id: "bench" },
  recursionLimit: RECURSION_LIMIT,
});

/**
 * 1. `createDeerflowAgent` with all features on: 50 warm-up builds, then 500 timed.
 * 2. Build + first superstep: build, then `stream(..., {streamMode: "updates"})` until the first chunk (the first
 *    graph node has run); 20 warm-up, 200 timed, each on a fresh thread with a fresh MemorySaver. The stream part
 *    alone is also reported from the same iterations.
 * 3. Build + first invoke: build and run one user message to the end (scripted model, no token delay).
 * Memory files go to a temporary DEER_FLOW_HOME, removed afterwards.
 */
export async function runSdkChainBench(): Promise<BenchSuite> {
  const home = mkdtempSync(path.join(tmpdir(), "sdk-chain-bench-"));
  const previousHome = process.env.DEER_FLOW_HOME;
  process.env.DEER_FLOW_HOME = home;
  try {
    const model = new ScriptedChatModel({ tokenDelayMs: 0 });
    const queue = new DeerMemManager({ backendConfig: { debounce_seconds: 3600 }, mode: "middleware", getAppConfig: () => parseAppConfig({ memory: { backend_config: { debounce_seconds: 3600 } } }), home });
    const build = await measure(BUILD_ITERATIONS, BUILD_WARMUP, async () => buildAll(model, queue));

    const stepPart: number[] = [];
    const firstStep = await measure(RUN_ITERATIONS, RUN_WARMUP, async (i) => {
      const agent = buildAll(model, queue);
      agent.checkpointer = new MemorySaver();
      const t0 = performance.now();
      const stream = await agent.stream({ messages: [new HumanMessage(`hello ${i}`)] } as never, { ...runConfig(i), streamMode: "updates" } as never);
      const iterator = (stream as AsyncIterable<unknown>)[Symbol.asyncIterator]();
      await iterator.next();
      if (i < RUN_ITERATIONS) stepPart.push(performance.now() - t0);
      await iterator.return?.();
    });

    let reply = "";
    const firstRun = await measure(RUN_ITERATIONS, RUN_WARMUP, async (i) => {
      const agent = buildAll(model, queue);
      agent.checkpointer = new MemorySaver();
      const out = (await agent.invoke({ messages: [new HumanMessage(`hello ${i}`)] } as never, runConfig(1_000_000 + i) as never)) as { messages: { content: unknown }[] };
      if (i === 0) reply = String(out.messages.at(-1)?.content);
    });

    await queue.forget({ userId: "bench", agentName: "default" });
    const sample = buildAll(model, queue);
    const nodes = Object.keys((sample as unknown as { graph: { nodes: Record<string, unknown> } }).graph.nodes).filter((n) => n !== "__start__");
    const chain = ((sample as unknown as { options: { middleware: { name: string }[] } }).options.middleware).map((m) => m.name);
    return {
      results: [
        { name: "createDeerflowAgent (all features)", samples: build },
        { name: "build + first superstep (stream, first chunk)", samples: firstStep },
        { name: "(same runs) first superstep part", samples: stepPart },
        { name: "build + first invoke (one user turn)", samples: firstRun },
      ],
      notes: [
        `${chain.length} middlewares: ${chain.join(", ")}`,
        `graph nodes: ${nodes.join(", ")} (every other hook is a wrap hook)`,
        `model: ScriptedChatModel (no token delay); ${BUILD_WARMUP} / ${RUN_WARMUP} warm-up iterations not timed; first run replied ${JSON.stringify(reply)}`,
      ],
    };
  } finally {
    if (previousHome === undefined) delete process.env.DEER_FLOW_HOME;
    else process.env.DEER_FLOW_HOME = previousHome;
    rmSync(home, { recursive: true, force: true });
  }
}
