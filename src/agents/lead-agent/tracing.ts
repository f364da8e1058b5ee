// Port of DeerFlow tracing/factory.py (build_tracing_callbacks): tracing handlers attached once, at the graph root.
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { LangChainTracer } from "@langchain/core/tracers/tracer_langchain";
import { readTracingConfig, type TracingConfig } from "../../config/tracing-config.js";
import { getLogger } from "../../logger.js";

let tracer: { project: string; handler: LangChainTracer } | null = null;
const warned = new Set<string>();

function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  getLogger().warn(message);
}

/**
 * The tracing callback handlers for one run: a LangSmith `LangChainTracer` (project from the config, one instance
 * shared by all runs) when LangSmith is enabled. LangSmith flagged without an API key, and Langfuse (no Langfuse
 * package is installed in this gateway), are reported once each and skipped. langchain adds its own tracer only
 * when none named `langchain_tracer` is present, so a run is never traced twice.
 */
export function buildTracingCallbacks(config: TracingConfig = readTracingConfig()): BaseCallbackHandler[] {
  const handlers: BaseCallbackHandler[] = [];
  if (config.langsmith.enabled) {
    if (tracer?.project !== config.langsmith.project) tracer = { project: config.langsmith.project, handler: new LangChainTracer({ projectName: config.langsmith.project }) };
    handlers.push(tracer.handler);
  } else if (config.langsmith.flagged) {
    warnOnce("langsmith-key", "LangSmith tracing is flagged on but LANGSMITH_API_KEY (or LANGCHAIN_API_KEY) is not set; tracing is off");
  }
  if (config.langfuse.flagged) {
    warnOnce("langfuse", "Langfuse tracing is configured (LANGFUSE_TRACING) but this gateway ships no Langfuse integration package; Langfuse tracing is off");
  }
  return handlers;
}
