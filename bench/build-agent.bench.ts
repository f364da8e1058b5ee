// Cost of the per-request agent build (DESIGN.md section 5, "Agent rebuilt per request"): makeLeadAgent alone, as a
// request pays it (resolution + a copy of the shared compiled graph) and on a signature's first build (the compile),
// and makeLeadAgent plus a first full run of the offline scripted model.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MemorySaver } from "@langchain/langgraph";
import { makeLeadAgent, type LeadAgentConfig } from "../src/agents/lead-agent/agent.js";
import { clearBuildCache } from "../src/agents/lead-agent/build-cache.js";
import { loadAppConfig, setAppConfig } from "../src/config/app-config.js";
import { parseAppConfig, type AppConfig } from "../src/config/schema.js";
import { measure, type BenchSuite } from "./stats.js";

const BUILD_WARMUP = 50;
const BUILD_ITERATIONS = 500;
const RUN_WARMUP = 20;
const RUN_ITERATIONS = 200;
const RECURSION_LIMIT = 100;
const SCRIPTED_USE = "deerflow-gateway:ScriptedChatModel";

/** The shipped default config, loaded the way `npm start` does (its `$OPENAI_*` references need the variables set). */
function loadDefaultConfig(): AppConfig {
  process.env.OPENAI_API_KEY ??= "";
  process.env.OPENAI_BASE_URL ||= "https://api.openai.com/v1";
  return loadAppConfig(fileURLToPath(new URL("../config/config.yaml", import.meta.url)));
}

/** `base` with every scripted model streaming without pauses, so a run measures the agent, not the demo delay. */
function withoutTokenDelay(base: AppConfig): AppConfig {
  return parseAppConfig({ ...base, models: base.models.map((m) => (m.use === SCRIPTED_USE ? { ...m, token_delay_ms: 0 } : m)) });
}

/** The config the worker hands the factory, reduced to what the build reads. */
function buildConfig(threadId: string, appConfig: AppConfig): LeadAgentConfig {
  return { configurable: { thread_id: threadId }, context: { thread_id: threadId, app_config: appConfig } };
}

/** Text of the last message of an agent result, for the report line. */
function lastText(result: unknown): string {
  const messages = (result as { messages?: { content?: unknown }[] }).messages ?? [];
  const content = messages.at(-1)?.content;
  return typeof content === "string" ? content : JSON.stringify(content ?? null);
}

/** Result rows plus free-text notes printed under the table. */
export type { BenchSuite } from "./stats.js";

/**
 * 1. `makeLeadAgent` with the default `config/config.yaml`: 50 warm-up builds, then 500 timed, as every request
 *    after the first pays it (the compiled graph shared), and again with the build cache cleared before each (the
 *    compile a new config version, user, agent or option combination pays once).
 * 2. `makeLeadAgent` + `agent.invoke` of one user message (scripted model, `token_delay_ms: 0`, a fresh
 *    MemorySaver, a new thread id per iteration, recursionLimit 100): 20 warm-up, then 200 timed; the build and the
 *    run are also reported on their own from the same iterations.
 * The runs' memory files go to a temporary DEER_FLOW_HOME, removed afterwards (not the checkout's `.deer-flow/`).
 */
export async function runBuildAgentBench(): Promise<BenchSuite> {
  const home = mkdtempSync(path.join(tmpdir(), "build-agent-bench-"));
  const previousHome = process.env.DEER_FLOW_HOME;
  process.env.DEER_FLOW_HOME = home;
  try {
    return await buildAgentSuite();
  } finally {
    if (previousHome === undefined) delete process.env.DEER_FLOW_HOME;
    else process.env.DEER_FLOW_HOME = previousHome;
    rmSync(home, { recursive: true, force: true });
  }
}

async function buildAgentSuite(): Promise<BenchSuite> {
  const appConfig = loadDefaultConfig();
  setAppConfig(appConfig);
  const build = await measure(BUILD_ITERATIONS, BUILD_WARMUP, () => makeLeadAgent(buildConfig("bench", appConfig)));
  const compile = await measure(BUILD_ITERATIONS, BUILD_WARMUP, () => {
    clearBuildCache();
    return makeLeadAgent(buildConfig("bench", appConfig));
  });

  const runConfig = withoutTokenDelay(appConfig);
  setAppConfig(runConfig);
  const buildPart: number[] = [];
  const invokePart: number[] = [];
  let reply = "";
  const buildAndRun = await measure(RUN_ITERATIONS, RUN_WARMUP, async (i) => {
    const threadId = `bench-run-${i}`;
    const t0 = performance.now();
    const agent = await makeLeadAgent(buildConfig(threadId, runConfig));
    agent.checkpointer = new MemorySaver();
    const t1 = performance.now();
    const result = await agent.invoke({ messages: [{ role: "user", content: `hello ${i}` }] }, {
      configurable: { thread_id: threadId },
      context: { thread_id: threadId, app_config: runConfig },
      recursionLimit: RECURSION_LIMIT,
    });
    const t2 = performance.now();
    if (i < RUN_ITERATIONS) {
      buildPart.push(t1 - t0);
      invokePart.push(t2 - t1);
    }
    if (i === 0) reply = lastText(result);
  });

  const model = runConfig.models[0];
  return {
    results: [
      { name: "makeLeadAgent (default config, shared graph)", samples: build },
      { name: "makeLeadAgent (default config, compiled)", samples: compile },
      { name: "makeLeadAgent + first invoke", samples: buildAndRun },
      { name: "(same runs) makeLeadAgent part", samples: buildPart },
      { name: "(same runs) invoke part", samples: invokePart },
    ],
    notes: [
      `model: ${model ? `${model.name} (${model.use})` : "(none)"}; ${BUILD_WARMUP} + ${RUN_WARMUP} warm-up iterations not timed`,
      `first timed run replied: ${JSON.stringify(reply)}`,
    ],
  };
}
