// Public entry of the server layer: the Fastify gateway and the services behind its routes. Embedders that only
// build agents import the SDK entry (src/index.ts) instead.
export { buildApp, type BuildAppOptions, type GatewayServices } from "./app.js";
export { resolveAgentFactory, type AgentFactory } from "./runtime/runs/agent-factory.js";
export { RunService, type StartedRun } from "./runtime/runs/run-service.js";
export { runAgent, type RunJob, type WorkerDeps } from "./runtime/runs/worker.js";
export { toWireEvents, graphStreamModes, type WireEvent } from "./runtime/wire/wire-events.js";
export { toMessages, toGraphInput, serializeMessage, serializeValues } from "./runtime/wire/messages.js";
export { principalOf, DEFAULT_PRINCIPAL, type Principal } from "./auth/principal.js";
