// Optional OpenTelemetry tracing: spans per HTTP request, run, model call and tool call, named and attributed
// after the OpenTelemetry GenAI semantic conventions, exported over OTLP/HTTP in batches. Off unless an endpoint
// is configured; an unreachable collector is logged once per distinct error and never fails a request or a run.
// The SDK and exporter are imported only when tracing starts: loaded, they hold ~11 MB of RSS a server without an
// endpoint would carry for nothing (the API used on the request path is small).
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from "@opentelemetry/api";
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { Logger } from "pino";

/** Where spans go: an OTLP/HTTP traces endpoint (e.g. `http://collector:4318/v1/traces`). */
export interface TracingOptions {
  /** Full OTLP/HTTP traces URL. */
  endpoint: string;
  /** `service.name` of the spans (default `deerflow-gateway`). */
  serviceName?: string;
  /** Extra headers for the exporter (collector auth). */
  headers?: Record<string, string>;
}

/** The gateway's tracer and the spans of requests still in flight (so a run can hang under its request). */
export interface GatewayTracing {
  tracer: Tracer;
  /** The server span of the in-flight request with this id, if any. */
  requestSpan(requestId: string): Span | undefined;
  /** Remembers (or forgets, with undefined) the server span of a request. */
  setRequestSpan(requestId: string, span: Span | undefined): void;
  /** Flushes pending spans and stops exporting. Never throws. */
  shutdown(): Promise<void>;
}

/**
 * Wraps a tracer (tests pass one over an in-memory exporter) with the request-span registry.
 * @param shutdown called by {@link GatewayTracing.shutdown}.
 */
export function createGatewayTracing(tracer: Tracer, shutdown: () => Promise<void> = async () => {}): GatewayTracing {
  const requests = new Map<string, Span>();
  return {
    tracer,
    requestSpan: (id) => requests.get(id),
    setRequestSpan: (id, span) => (span ? requests.set(id, span) : requests.delete(id)),
    shutdown: () => shutdown().catch(() => undefined),
  };
}

/**
 * Starts OTLP/HTTP tracing with a batch span processor (spans leave the request path; a collector that is down
 * costs a dropped batch, not latency). Export errors reach OpenTelemetry's global error handler, which here logs
 * each distinct message once at warn level (a failed final flush too). Imports the OpenTelemetry SDK on first use.
 * @param processors extra span processors (tests).
 */
export async function startTracing(options: TracingOptions, logger: Logger, processors: SpanProcessor[] = []): Promise<GatewayTracing> {
  const [{ setGlobalErrorHandler }, { OTLPTraceExporter }, { resourceFromAttributes }, { BasicTracerProvider, BatchSpanProcessor }] = await Promise.all([
    import("@opentelemetry/core"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace-base"),
  ]);
  const seen = new Set<string>();
  const report = (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    if (seen.has(message)) return;
    seen.add(message);
    logger.warn({ err: message, endpoint: options.endpoint }, "trace export failed; runs are unaffected (logged once per distinct error)");
  };
  setGlobalErrorHandler(report);
  const exporter = new OTLPTraceExporter({ url: options.endpoint, headers: options.headers, timeoutMillis: 5_000 });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName ?? "deerflow-gateway" }),
    spanProcessors: [new BatchSpanProcessor(exporter), ...processors],
  });
  // A final flush that fails (collector down at shutdown) is reported the same way, never thrown.
  return createGatewayTracing(provider.getTracer("deerflow-gateway"), () => provider.shutdown().catch(report));
}

/** Span name and attributes of a run (GenAI `invoke_agent`). */
export function startRunSpan(tracing: GatewayTracing, run: { runId: string; threadId: string; assistantId: string; requestId?: string }): Span {
  const parent = run.requestId ? tracing.requestSpan(run.requestId) : undefined;
  return tracing.tracer.startSpan(
    `invoke_agent ${run.assistantId}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": run.assistantId,
        "gen_ai.conversation.id": run.threadId,
        "deerflow.run_id": run.runId,
        ...(run.requestId ? { "deerflow.request_id": run.requestId } : {}),
      },
    },
    parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
  );
}

/** Starts a child span of `parent` (a model or tool call of a run). */
export function startChildSpan(tracing: GatewayTracing, parent: Span | undefined, name: string, kind: SpanKind, attributes: Record<string, string | number | boolean>): Span {
  return tracing.tracer.startSpan(name, { kind, attributes }, parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT);
}

/** Ends `span` as failed with `err` (`error.type` attribute, exception event). */
export function failSpan(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setAttribute("error.type", e.constructor?.name && e.constructor.name !== "Error" ? e.constructor.name : e.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
  span.end();
}
