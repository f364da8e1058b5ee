// Operations console (DeerFlow app/gateway/routers/console.py), read-only, under /api/console: the caller's headline
// counters, their runs across threads and their token usage by local day and by model. Every answer covers the
// caller's own threads only, admins included (upstream scopes by the current user). Spend comes from
// `models[*].pricing` in config.yaml.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { consoleRuns, consoleStats, consoleUsage, type ConsoleDeps } from "../src/runtime/console/console-service.js";
import { readThreadState } from "../src/runtime/threads/thread-state-reader.js";
import { doc, validInput } from "./openapi.js";

const RunsQuery = z.looseObject({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe("Runs per page (1-100)"),
  offset: z.coerce.number().int().min(0).default(0),
  status: z.string().max(32).optional().describe("Only runs with this status (e.g. running, success, error)"),
});
const UsageQuery = z.looseObject({
  days: z.coerce.number().int().min(1).max(90).default(14).describe("Local days, today included (1-90)"),
  tz_offset_minutes: z.coerce.number().int().min(-840).max(840).default(0).describe("Local-time offset from UTC for day bucketing"),
});

/** Registers `GET /console/stats`, `/console/runs` and `/console/usage` (mounted under `/api`). */
export async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const deps = (): ConsoleDeps => {
    const { persistence, getAppConfig } = app.deerflow;
    return {
      runs: persistence.runs,
      models: getAppConfig().models,
      threadTitle: async (threadId) => {
        const title = (await readThreadState(persistence.checkpointer, threadId)).values.title;
        return typeof title === "string" && title ? title : null;
      },
    };
  };
  const userId = (request: FastifyRequest) => principalOf(request).id;

  app.get("/console/stats", { schema: doc("console", "Headline counters (runs, threads, agents, tokens, spend) of your threads") }, async (request) => {
    let agents = 0;
    try {
      agents = app.deerflow.agents.list(userId(request)).length;
    } catch (err) {
      // An unreadable agents directory must not fail the dashboard (upstream counts 0).
      request.log.warn({ err: (err as Error).message }, "console stats: listing custom agents failed");
    }
    return consoleStats(deps(), userId(request), agents);
  });

  app.get("/console/runs", { schema: doc("console", "Your runs across threads, newest first", { querystring: RunsQuery }) }, async (request) => {
    const query = validInput(RunsQuery, request.query, "query");
    return consoleRuns(deps(), userId(request), { limit: query.limit, offset: query.offset, status: query.status });
  });

  app.get("/console/usage", { schema: doc("console", "Your token usage by local day and by model", { querystring: UsageQuery }) }, async (request) => {
    const query = validInput(UsageQuery, request.query, "query");
    return consoleUsage(deps(), userId(request), { days: query.days, tzOffsetMinutes: query.tz_offset_minutes });
  });
}
