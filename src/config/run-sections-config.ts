// The `run_events`, `agent_storage` and `run_ownership` sections (DeerFlow config/run_events_config.py,
// agent_storage_config.py, run_ownership_config.py), zod only.
import { z } from "zod";

/**
 * `run_events`: where each run's event log (`GET /threads/{id}/runs/{run_id}/events`) is kept. `db` (the gateway's
 * default: the `run_events` table of the gateway database, SQLite under DEER_FLOW_HOME or PostgreSQL with
 * `database.backend: postgres`, shared by every process) or `memory` (this process only, lost on restart;
 * DeerFlow's default). `max_trace_content`: a trace event whose content is larger (bytes of its JSON) is stored as a
 * preview of that size. `track_token_usage`: whether a run's token counts are recorded on the run (Run JSON).
 * DeerFlow's `jsonl` backend is refused (the gateway reads old JSON Lines logs but no longer writes them).
 */
export const RunEventsConfigSchema = z.object({
  backend: z.enum(["memory", "db", "jsonl"]).default("db").refine((b) => b !== "jsonl", {
    message: "run_events.backend 'jsonl' is not offered by deerflow-gateway; use 'db' (the gateway database) or 'memory'",
  }),
  max_trace_content: z.number().int().min(0).default(10240),
  track_token_usage: z.boolean().default(true),
});
/** A validated `run_events` section. */
export type RunEventsConfig = z.infer<typeof RunEventsConfigSchema>;

/**
 * `agent_storage`: where custom agent definitions live. Only `file` (the versioned directories under
 * `DEER_FLOW_AGENTS_DIR`) is offered; DeerFlow's `db` backend (a row per agent in the SQL database) is refused at
 * load with a message saying so.
 */
export const AgentStorageConfigSchema = z.object({
  backend: z.enum(["file", "db"]).default("file").refine((b) => b === "file", {
    message: "agent_storage.backend 'db' (custom agents stored in the gateway database) is not offered by deerflow-gateway; use 'file' and share DEER_FLOW_AGENTS_DIR between processes",
  }),
});

/**
 * `run_ownership`: the lease of a process's runs when several processes share Redis and PostgreSQL (docs/scale-out.md).
 * A process renews its lease every `lease_seconds / 3`; a peer marks its runs interrupted once it has been silent for
 * `lease_seconds + grace_seconds`. When set, this replaces `stream_bridge.lease_ms`. `heartbeat_enabled` is accepted
 * for DeerFlow compatibility: the heartbeat runs whenever the gateway runs shared (it is how peers see it alive).
 */
export const RunOwnershipConfigSchema = z.object({
  lease_seconds: z.number().int().min(5).default(30),
  grace_seconds: z.number().int().min(0).default(10),
  heartbeat_enabled: z.boolean().default(false),
});
/** A validated `run_ownership` section. */
export type RunOwnershipConfig = z.infer<typeof RunOwnershipConfigSchema>;
