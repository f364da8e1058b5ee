// Port of DeerFlow tracing/factory.py (build_tracing_callbacks): tracing handlers attached once, at the graph root.
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { LangChainTracer } from "@langchain/core/tracers/tracer_langchain";
import type { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { readTracingConfig, type TracingConfig } from "../../config/tracing-config.js";
import { getLogger } from "../../logger.js";

let tracer: { project: string; handler: LangChainTracer } | null = null;
let langfuse: { key: string; provider: BasicTracerProvider; Handler: LangfuseHandlerClass } | null = null;

/** @langfuse/langchain's CallbackHandler constructor. */
type LangfuseHandlerClass = new (options: { userId?: string; sessionId?: string }) => BaseCallbackHandler;
const warned = new Set<string>();

function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  getLogger().warn(message);
}

/**
 * The Langfuse exporter for `config` (one per public key and base URL, made once): an OpenTelemetry tracer
 * provider with Langfuse's span processor, installed as Langfuse's *isolated* provider so the process's global
 * OpenTelemetry setup is left alone. Spans are batched and posted to `<base URL>/api/public/otel/v1/traces` in
 * the background; an unreachable backend only loses spans (the exporter logs through OpenTelemetry's diag), it
 * never fails a run.
 */
async function ensureLangfuse(config: TracingConfig["langfuse"]): Promise<LangfuseHandlerClass> {
  const key = `${config.publicKey}@${config.baseUrl}`;
  if (langfuse?.key === key) return langfuse.Handler;
  // Loaded on first use: Langfuse and the OpenTelemetry SDK add ~10 MB to every process that never traces.
  const [{ CallbackHandler }, { LangfuseSpanProcessor }, { setLangfuseTracerProvider }, { context }, { AsyncLocalStorageContextManager }, { BasicTracerProvider }] = await Promise.all([
    import("@langfuse/langchain"),
    import("@langfuse/otel"),
    import("@langfuse/tracing"),
    import("@opentelemetry/api"),
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/sdk-trace-base"),
  ]);
  if (langfuse?.key === key) return langfuse.Handler;
  const previous = langfuse?.provider;
  const provider = new BasicTracerProvider({
    spanProcessors: [new LangfuseSpanProcessor({ publicKey: config.publicKey!, secretKey: config.secretKey!, baseUrl: config.baseUrl, exportMode: "batched" })],
  });
  setLangfuseTracerProvider(provider);
  // The handler nests spans and carries user/session through the OpenTelemetry context; without a context
  // manager that context is lost across awaits. Registered only when the process has none (returns false then).
  const manager = new AsyncLocalStorageContextManager().enable();
  if (!context.setGlobalContextManager(manager)) manager.disable();
  langfuse = { key, provider, Handler: CallbackHandler as unknown as LangfuseHandlerClass };
  void previous?.shutdown().catch(() => undefined);
  return langfuse.Handler;
}

/**
 * The tracing callback handlers for one run: a LangSmith `LangChainTracer` (project from the config, one instance
 * shared by all runs) when LangSmith is enabled, and a Langfuse `CallbackHandler` (@langfuse/langchain) when
 * Langfuse is enabled (`LANGFUSE_TRACING` with both keys; DeerFlow `_create_langfuse_handler`). Either flagged
 * without its credentials is reported once and skipped. langchain adds its own tracer only when none named
 * `langchain_tracer` is present, so a run is never traced twice. Handler errors are swallowed by langchain's
 * callback manager, so tracing can never fail a run.
 * @param run The run's user and thread, recorded on the Langfuse trace (`userId`, `sessionId`).
 */
export async function buildTracingCallbacks(config: TracingConfig = readTracingConfig(), run: { userId?: string | null; threadId?: string | null } = {}): Promise<BaseCallbackHandler[]> {
  const handlers: BaseCallbackHandler[] = [];
  if (config.langsmith.enabled) {
    if (tracer?.project !== config.langsmith.project) tracer = { project: config.langsmith.project, handler: new LangChainTracer({ projectName: config.langsmith.project }) };
    handlers.push(tracer.handler);
  } else if (config.langsmith.flagged) {
    warnOnce("langsmith-key", "LangSmith tracing is flagged on but LANGSMITH_API_KEY (or LANGCHAIN_API_KEY) is not set; tracing is off");
  }
  if (config.langfuse.enabled) {
    try {
      const Handler = await ensureLangfuse(config.langfuse);
      handlers.push(new Handler({ ...(run.userId ? { userId: run.userId } : {}), ...(run.threadId ? { sessionId: run.threadId } : {}) }));
    } catch (err) {
      warnOnce("langfuse-init", `Langfuse tracing could not start (${(err as Error).message}); tracing to Langfuse is off`);
    }
  } else if (config.langfuse.flagged) {
    warnOnce("langfuse-keys", "Langfuse tracing is flagged on (LANGFUSE_TRACING) but LANGFUSE_PUBLIC_KEY or LANGFUSE_SECRET_KEY is not set; Langfuse tracing is off");
  }
  return handlers;
}

/**
 * Sends the Langfuse spans still buffered (call on shutdown, or in tests before asserting). Resolves even when
 * the backend is down (the failure is logged at debug level). No-op when Langfuse was never started.
 */
export async function flushTracing(): Promise<void> {
  try {
    await langfuse?.provider.forceFlush();
  } catch (err) {
    getLogger().debug({ err: (err as Error).message }, "Langfuse flush failed");
  }
}
