// The route table. LangGraph-compatible routes are mounted at `/` and at `/api` (so both `new Client({apiUrl})` and the DeerFlow web app's `/api` base work);
// DeerFlow-only routes live under `/api`; `/health` at the root.
//
//   GET  /health, /healthz, /readyz               health.ts
//   GET  /api/models, /api/models/:name           models.ts
//   GET  /api/agents, /api/agents/check?name=     agents.ts    (gated by agents_api.enabled)
//   GET|PUT|DELETE /api/agents/:name, POST /api/agents, GET|PUT /api/user-profile
//   POST /threads, /threads/search                threads.ts   (every LangGraph route also under /api)
//   GET|PATCH|DELETE /threads/:thread_id          threads.ts
//   GET|POST /threads/:thread_id/state            threads.ts
//   POST /threads/:thread_id/history              threads.ts
//   POST /threads/:thread_id/runs[/stream|/wait]  runs.ts      (stream = SSE)
//   POST /runs[/stream|/wait]                     runs.ts      (stateless)
//   GET  /threads/:thread_id/runs[/:run_id]       runs.ts
//   DELETE /threads/:thread_id/runs/:run_id       runs.ts
//   POST /threads/:thread_id/runs/:run_id/cancel  runs.ts      (?wait=0|1&action=interrupt|rollback)
//   GET  /threads/:thread_id/runs/:run_id/join    runs.ts      (final state as JSON)
//   GET|POST /threads/:thread_id/runs/:run_id/stream  runs.ts  (join stream, Last-Event-ID; POST cancels first)
//   POST /assistants/search, GET /assistants/:id[/graph|/schemas]  assistants.ts
//   POST|GET /api/threads/:thread_id/uploads      uploads.ts   (multipart; limits from config `uploads`)
//   DELETE /api/threads/:thread_id/uploads/:filename  uploads.ts
//   GET  /api/threads/:thread_id/artifacts/*      artifacts.ts (files of the thread's /mnt/user-data only)
//   /api/v1/auth/{setup-status,initialize,register,login/local,logout,me,change-password,providers}  auth.ts
//   GET  /api/v1/auth/providers, /api/v1/auth/oauth/:provider, /api/v1/auth/callback/:provider (SSO)  auth-sso.ts
//   POST|GET /api/v1/auth/api-keys, DELETE /api/v1/auth/api-keys/:key_id                             auth.ts
//   GET  /api/threads/:thread_id/uploads/list|limits  uploads.ts (a not-yet-existing thread is claimed by its first upload)
//   GET  /api/threads/:thread_id/messages/page, token-usage; GET|PUT|DELETE .../goal      thread-feed.ts
//   GET  /api/threads/:thread_id/runs/:run_id/events|workspace-changes, .../feedback      thread-feed.ts
//   GET  /api/features, /api/suggestions/config; POST .../suggestions, /api/input-polish    web-features.ts
//   POST /api/threads/:thread_id/runs/regenerate/prepare|edit-regenerate/prepare, /branches  replay.ts
//   GET /api/skills, PUT /api/skills/:name, /api/skills/custom[/:name[/history|/rollback]], /api/mcp/config, /api/mcp/cache/reset  settings.ts
//   POST /api/skills/install, GET /api/skills/:name                                                 skill-install.ts
//   GET /api/threads/:id/messages, .../runs/:run_id/messages, /api/runs/:run_id/messages|feedback,
//   GET .../runs/:run_id/feedback/stats, DELETE .../runs/:run_id/feedback/:feedback_id                run-messages.ts
//   /api/memory[/reload|/facts[/:id]|/export|/import|/config|/status]                                memory.ts
//   GET /api/threads/:thread_id/mcp-tasks[/:task_id], POST .../:task_id/cancel   mcp-tasks.ts (MCP background tasks)
//   /api/scheduled-tasks[/:task_id[/pause|/resume|/trigger|/runs]], /api/threads/:thread_id/scheduled-tasks  scheduled-tasks.ts
//   /api/channels[/providers|/connections[/:id]|/:provider/connect], POST /api/channels/webhooks/:provider  channels.ts
//   integrations/lark, browser: "not offered" answers web-features.ts
//   GET  /metrics                                 metrics.ts   (Prometheus)
//   GET  /api/usage                               usage.ts     (the caller's token usage and limits)
//   GET  /api/console/stats|runs|usage            console.ts   (the caller's runs, tokens and spend across threads)
import type { FastifyInstance } from "fastify";
import { agentRoutes } from "./agents.js";
import { artifactRoutes } from "./artifacts.js";
import { assistantRoutes } from "./assistants.js";
import { authRoutes } from "./auth.js";
import { ssoRoutes } from "./auth-sso.js";
import { healthRoutes } from "./health.js";
import { metricsRoutes } from "./metrics.js";
import { usageRoutes } from "./usage.js";
import { consoleRoutes } from "./console.js";
import { modelRoutes } from "./models.js";
import { runRoutes } from "./runs.js";
import { threadRoutes } from "./threads.js";
import { uploadRoutes } from "./uploads.js";
import { threadFeedRoutes } from "./thread-feed.js";
import { webFeatureRoutes } from "./web-features.js";
import { mcpTaskRoutes } from "./mcp-tasks.js";
import { replayRoutes } from "./replay.js";
import { settingsRoutes } from "./settings.js";
import { memoryRoutes } from "./memory.js";
import { scheduledTaskRoutes } from "./scheduled-tasks.js";
import { skillInstallRoutes } from "./skill-install.js";
import { runMessageRoutes } from "./run-messages.js";
import { channelRoutes } from "./channels.js";

/** Registers every route of the gateway. */
export async function registerRoutes(app: FastifyInstance): Promise<void> {
  await app.register(healthRoutes);
  await app.register(authRoutes, { prefix: "/api/v1/auth" });
  await app.register(ssoRoutes, { prefix: "/api/v1/auth" });
  await app.register(metricsRoutes);
  await app.register(modelRoutes, { prefix: "/api" });
  await app.register(usageRoutes, { prefix: "/api" });
  await app.register(consoleRoutes, { prefix: "/api" });
  await app.register(agentRoutes, { prefix: "/api" });
  await app.register(uploadRoutes, { prefix: "/api" });
  await app.register(artifactRoutes, { prefix: "/api" });
  await app.register(threadFeedRoutes, { prefix: "/api" });
  await app.register(webFeatureRoutes, { prefix: "/api" });
  await app.register(mcpTaskRoutes, { prefix: "/api" });
  await app.register(replayRoutes, { prefix: "/api" });
  await app.register(settingsRoutes, { prefix: "/api" });
  await app.register(memoryRoutes, { prefix: "/api" });
  await app.register(scheduledTaskRoutes, { prefix: "/api" });
  await app.register(skillInstallRoutes, { prefix: "/api" });
  await app.register(runMessageRoutes, { prefix: "/api" });
  await app.register(channelRoutes, { prefix: "/api" });
  for (const prefix of ["", "/api"]) {
    await app.register(threadRoutes, { prefix });
    await app.register(runRoutes, { prefix });
    await app.register(assistantRoutes, { prefix });
  }
}
