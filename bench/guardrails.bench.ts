// Added CPU per run of the tool guards (issue 46): the same agent through createDeerflowAgent with no guard, with a
// GuardrailMiddleware over the allowlist provider, and with both guards (authorization adapter over RBAC, then the
// allowlist). Each run is one user turn `!call echo {...}`: one tool call (checked by each guard) and a final answer.
// Variants are interleaved per round so a slow stretch of the host hits all of them. Run: npx tsx bench/guardrails.bench.ts
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { createDeerflowAgent } from "../src/agents/factory.js";
import { AllowlistProvider, GuardrailMiddleware } from "../src/agents/middlewares/guardrails.js";
import { GuardrailAuthorizationAdapter, RbacAuthorizationProvider } from "../src/agents/middlewares/rbac-provider.js";
import { ScriptedChatModel } from "../src/models/scripted-chat-model.js";

const RUNS = Number(process.env.RUNS ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const echo = tool(async ({ text }) => `echo: ${text}`, { name: "echo", description: "Echo the text", schema: z.object({ text: z.string() }) });
const rbac = new RbacAuthorizationProvider({ roles: { user: { tools: { allow: "*", deny: ["write_file"] } } } });
const variants = {
  none: () => [],
  guardrails: () => [new GuardrailMiddleware(new AllowlistProvider({ denied_tools: ["bash", "write_file"] }))],
  "authorization+guardrails": () => [
    new GuardrailMiddleware(new GuardrailAuthorizationAdapter(rbac, "user"), { guard: "authorization" }),
    new GuardrailMiddleware(new AllowlistProvider({ denied_tools: ["bash", "write_file"] })),
  ],
};
type Name = keyof typeof variants;
const agents = Object.fromEntries(
  (Object.keys(variants) as Name[]).map((name) => [name, createDeerflowAgent(new ScriptedChatModel({}), [echo], { features: { sandbox: false, loopDetection: false }, extraMiddleware: variants[name]() })]),
) as Record<Name, ReturnType<typeof createDeerflowAgent>>;

async function runOnce(name: Name, i: number): Promise<void> {
  const out = await agents[name].invoke({ messages: [{ role: "user", content: `!call echo {"text": "run ${i}"}` }] }, { context: { thread_id: `t${i}`, user_id: "u", user_role: "user" } });
  const toolMsg = out.messages.find((m: { getType(): string }) => m.getType() === "tool");
  if (!String(toolMsg?.content).startsWith("echo:")) throw new Error(`${name}: the tool did not run: ${toolMsg?.content}`);
}

const perRun: Record<Name, number[]> = { none: [], guardrails: [], "authorization+guardrails": [] };
for (const name of Object.keys(variants) as Name[]) for (let i = 0; i < 50; i++) await runOnce(name, i); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const name of Object.keys(variants) as Name[]) {
    const start = process.cpuUsage();
    for (let i = 0; i < RUNS; i++) await runOnce(name, i);
    const used = process.cpuUsage(start);
    perRun[name].push((used.user + used.system) / RUNS);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(perRun.none);
for (const name of Object.keys(variants) as Name[]) {
  const m = median(perRun[name]);
  console.log(`${name.padEnd(26)} median ${(m / 1000).toFixed(3)} ms CPU/run  (rounds ${perRun[name].map((x) => (x / 1000).toFixed(2)).join(" ")})  ${name === "none" ? "" : `+${(m - base).toFixed(0)} µs (${(((m - base) / base) * 100).toFixed(1)}%)`}`);
}
