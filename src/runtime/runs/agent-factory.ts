// Port of DeerFlow's resolve_agent_factory: every assistant id is served by the one lead-agent factory.
import { makeLeadAgent, type LeadAgentConfig } from "../../agents/lead-agent/agent.js";

/** A LangGraph-style graph factory: `(config) => graph` (sync or async). The graph must offer `stream`. */
export type AgentFactory = (config: LeadAgentConfig) => Promise<StreamableGraph> | StreamableGraph;

/** What the worker needs of a built graph: `stream` (LangGraph semantics) and a settable `checkpointer`. */
export interface StreamableGraph {
  stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<unknown>>;
  checkpointer?: unknown;
}

/**
 * The factory for an assistant id: always `makeLeadAgent` (custom agents are the same graph built with an
 * `agent_name`). Mirrors DeerFlow `resolve_agent_factory`.
 */
export function resolveAgentFactory(_assistantId?: string | null): AgentFactory {
  return makeLeadAgent as unknown as AgentFactory;
}
