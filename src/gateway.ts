// Public entry of the server layer: the Fastify gateway and the services behind its routes. Embedders that only
// build agents import the SDK entry (src/index.ts) instead.
export { buildApp, type BuildAppOptions, type GatewayServices } from "./app.js";
export { resolveAgentFactory, type AgentFactory } from "./runtime/agent-factory.js";
export { RunService, type StartedRun } from "./runtime/run-service.js";
export { runAgent, type RunJob, type WorkerDeps } from "./runtime/worker.js";
export { toWireEvents, graphStreamModes, type WireEvent } from "./runtime/wire-events.js";
export { toMessages, toGraphInput, serializeMessage, serializeValues } from "./runtime/messages.js";
export { principalOf, DEFAULT_PRINCIPAL, type Principal } from "./auth/principal.js";
