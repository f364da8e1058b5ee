// Port of DeerFlow agents/factory.py (create_deerflow_agent): the SDK layer, plain arguments only.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { SystemMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { createAgent, type AgentMiddleware } from "langchain";
import { DeerflowError } from "../errors.js";
import { assembleFromFeatures, insertExtra, type NamedTool } from "./chain.js";
import { RuntimeFeatures, type RuntimeFeaturesInit } from "./features.js";
import { isMiddleware } from "./middlewares/base.js";
import { fuseModelCallWrappers } from "../perf/model-call-chain.js";
import { perfPatchOn } from "../perf/state.js";
import { ThreadState } from "./thread-state.js";

/** Options of {@link createDeerflowAgent}. */
export interface CreateDeerflowAgentOptions {
  /** System prompt passed to the agent as is (no default text is substituted). */
  systemPrompt?: string | SystemMessage;
  /** Full takeover: this exact chain, no feature assembly, no tool injection, no Clarification tail. */
  middleware?: AgentMiddleware[];
  /** Feature flags (or their init object); default `new RuntimeFeatures()`. Exclusive with `middleware`. */
  features?: RuntimeFeatures | RuntimeFeaturesInit;
  /** Extra middlewares placed by `@Next` / `@Prev`, or just before Clarification when unanchored. */
  extraMiddleware?: AgentMiddleware[];
  /** Adds TodoMiddleware (plan mode). */
  planMode?: boolean;
  /** Graph state schema; default {@link ThreadState}. */
  stateSchema?: unknown;
  /** Checkpointer for thread persistence. */
  checkpointer?: BaseCheckpointSaver;
  /** Agent name (graph name); default `"default"`. */
  name?: string;
}

/** The compiled agent `createDeerflowAgent` returns (langchain's ReactAgent). */
export type DeerflowAgent = ReturnType<typeof createAgent>;

/**
 * Creates a DeerFlow agent from plain arguments on langchain's `createAgent`. Validation, in order (DeerFlow
 * `factory.py:125-140`): `middleware` with `features` is rejected; `middleware` with a non-empty
 * `extraMiddleware` is rejected ("full takeover"); every extra must be a middleware. Without `middleware`, the
 * chain comes from `assembleFromFeatures` plus `insertExtra`, and the feature tools are appended after the user
 * tools, skipping names the user already provides (user tools win). `name` is the graph name and the built-in
 * memory's bucket.
 * @param model A LangChain chat model. @param tools The agent's tools (copied).
 * @throws DeerflowError (`validation_failed`) on the conflicts above or a bad feature flag.
 * @throws TypeError "extra_middleware items must be AgentMiddleware instances, got <Type>".
 * @example
 * ```ts
 * import { createDeerflowAgent, RuntimeFeatures, ScriptedChatModel } from "deerflow-gateway";
 * const agent = createDeerflowAgent(new ScriptedChatModel(), [], {
 *   features: new RuntimeFeatures({ sandbox: false, memory: false, subagent: false }),
 *   systemPrompt: "You are terse.",
 * });
 * const state = await agent.invoke({ messages: [{ role: "user", content: "hi" }] }, { context: { thread_id: "t1" } });
 * ```
 */
export function createDeerflowAgent(model: BaseChatModel, tools: NamedTool[] | null = null, options: CreateDeerflowAgentOptions = {}): DeerflowAgent {
  if (options.middleware && options.features) throw new DeerflowError("validation_failed", "Cannot specify both 'middleware' and 'features'");
  if (options.middleware && options.extraMiddleware?.length) {
    throw new DeerflowError("validation_failed", "Cannot use 'extra_middleware' with 'middleware' (full takeover)");
  }
  for (const extra of options.extraMiddleware ?? []) {
    if (!isMiddleware(extra)) {
      const type = extra === null ? "null" : typeof extra === "object" ? (extra as object).constructor?.name ?? "Object" : typeof extra;
      throw new TypeError(`extra_middleware items must be AgentMiddleware instances, got ${type}`);
    }
  }
  const finalTools: NamedTool[] = [...(tools ?? [])];
  let middleware: AgentMiddleware[];
  if (options.middleware) {
    middleware = [...options.middleware];
  } else {
    const features = options.features instanceof RuntimeFeatures ? options.features : new RuntimeFeatures(options.features);
    const assembled = assembleFromFeatures(features, { planMode: options.planMode, name: options.name ?? "default" });
    middleware = insertExtra(assembled.middleware, options.extraMiddleware ?? []);
    const names = new Set(finalTools.map((t) => t.name));
    for (const t of assembled.featureTools) if (!names.has(t.name)) finalTools.push(t);
  }
  // In the server the graph is built with the gateway's model-call wrappers fused (src/perf/model-call-chain.ts, a
  // fenced speed patch) ...
  const fused = perfPatchOn("model-call-chain") ? fuseModelCallWrappers(middleware, finalTools) : middleware;
  const agent = createAgent({
    model,
    tools: (finalTools.length ? finalTools : undefined) as never,
    middleware: fused as never,
    stateSchema: (options.stateSchema ?? ThreadState) as never,
    systemPrompt: options.systemPrompt,
    checkpointer: options.checkpointer,
    name: options.name ?? "default",
  }) as unknown as DeerflowAgent;
  // ... and `options.middleware` (langchain's ReactAgent field) still lists the chain as assembled, as without the
  // patch (a rebuild from it fuses nothing, same behaviour).
  const built = agent as unknown as { options?: { middleware?: AgentMiddleware[] } };
  if (fused !== middleware && typeof built.options === "object" && built.options !== null) built.options = { ...built.options, middleware };
  return agent;
}
