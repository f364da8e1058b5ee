// CPU per run of the lead agent's whole middleware chain, for before/after comparisons of a chain change: the
// lead agent (shipped config, scripted model, no title, no memory, MemorySaver) built per run through the factory
// (makeLeadAgent) and streamed, from the source tree at SRC_ROOT (default this checkout). Prints one JSON line:
// {root, runs, cpu_ms_per_run}. Interleave two trees by running it alternately (docs/middlewares.md).
import { fileURLToPath } from "node:url";
import { MemorySaver } from "@langchain/langgraph";

const root = process.env.SRC_ROOT ?? fileURLToPath(new URL("..", import.meta.url));
const RUNS = Number(process.env.RUNS ?? 300);
const WARMUP = 100;
const src = (p: string) => import(`${root}/src/${p}`);

const { makeLeadAgent } = await src("agents/lead-agent/agent.ts");
const { buildRunContext } = await src("agents/run-context.ts");
const { loadAppConfig, setAppConfig } = await src("config/app-config.ts");
const { parseAppConfig } = await src("config/schema.ts");
const { installPerfPatches } = await src("perf/patches.ts");
installPerfPatches();
process.env.OPENAI_API_KEY ??= "";
process.env.OPENAI_BASE_URL ||= "https://api.openai.com/v1";
const base = loadAppConfig(`${root}/config/config.yaml`);
const appConfig = parseAppConfig({ ...base, models: base.models.map((m: { use: string }) => (m.use === "deerflow-gateway:ScriptedChatModel" ? { ...m, token_delay_ms: 0 } : m)), title: { enabled: false }, memory: { enabled: false } });

async function run(i: number): Promise<void> {
  setAppConfig(appConfig);
  const threadId = `chain-${i}`;
  const context = buildRunContext({ threadId, runId: `run-${i}`, userId: "bench", appConfig });
  const agent = await makeLeadAgent({ configurable: { thread_id: threadId }, context });
  agent.checkpointer = new MemorySaver();
  const graph = agent.graph ?? agent;
  for await (const chunk of await graph.stream({ messages: [{ role: "user", content: "hi" }] }, { configurable: { thread_id: threadId }, context, recursionLimit: 100, streamMode: ["values", "messages"] })) void chunk;
}

for (let i = 0; i < WARMUP; i++) await run(-1 - i);
const start = process.cpuUsage();
for (let i = 0; i < RUNS; i++) await run(i);
const used = process.cpuUsage(start);
console.log(JSON.stringify({ root, runs: RUNS, cpu_ms_per_run: (used.user + used.system) / 1000 / RUNS }));
