// DeerFlow web-app feature routes: `GET /api/features` (app/gateway/routers/features.py), follow-up suggestions
// (suggestions.py), input polish (input_polish.py), and the answers for features this gateway does not offer
// (the Lark integration, browser control), each in the shape the app reads
// as "not configured / disabled" so it hides the feature instead of retrying or showing an error.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { BadRequestError, DeerflowError, NotFoundError } from "../src/errors.js";
import { parseJsonStringList, runOneshot } from "../src/runtime/webapp/oneshot.js";
import { doc, validInput } from "./openapi.js";
import { ownedThread } from "./thread-access.js";

/** Upstream DEFAULT_MAX_SUGGESTIONS / MAX_SUGGESTIONS_LIMIT. */
const DEFAULT_MAX_SUGGESTIONS = 3;
const MAX_SUGGESTIONS_LIMIT = 10;

/** The `suggestions` config section (not in the core schema; unknown top-level keys are kept by the loader). */
const SuggestionsConfig = z.looseObject({
  enabled: z.boolean().default(true),
  max_suggestions: z.number().int().min(1).max(MAX_SUGGESTIONS_LIMIT).default(DEFAULT_MAX_SUGGESTIONS),
  model_name: z.string().nullish(),
});
const SuggestionsBody = z.looseObject({
  messages: z.array(z.looseObject({ role: z.string(), content: z.string() })).max(100),
  n: z.number().int().min(1).max(MAX_SUGGESTIONS_LIMIT).default(DEFAULT_MAX_SUGGESTIONS),
  model_name: z.string().nullish(),
});
/** The `input_polish` config section (DeerFlow `input_polish_config.py`): switch, draft cap, model. */
const InputPolishConfig = z.looseObject({
  enabled: z.boolean().default(true),
  max_chars: z.number().int().min(1).default(4000),
  model_name: z.string().nullish(),
});
const PolishBody = z.looseObject({ text: z.string().max(20_000), locale: z.string().max(64).nullish(), thread_id: z.string().nullish(), model_name: z.string().nullish() });

/** Instruction of the suggestions call (our wording of upstream's intent). */
const SUGGESTIONS_SYSTEM = (n: number) =>
  `You suggest follow-up questions. Given a conversation, write ${n} short questions the user is likely to ask next, ` +
  "in the user's language. Answer with a JSON array of strings only, nothing else.";
/** Instruction of the input-polish call (our wording of upstream's intent). */
const POLISH_SYSTEM =
  "Rewrite the user's draft into a clearer instruction for an AI agent. Do not answer it. Keep its language, intent, " +
  "names, paths, URLs, code and any leading slash command exactly. Do not invent facts. Output only the rewritten draft.";

/** Answer of an action on a feature this gateway does not offer. */
class NotOfferedError extends DeerflowError {
  constructor(feature: string) {
    super("unsupported", `${feature} is not offered by this gateway`);
  }
}

const disabledLarkStatus = () => ({
  installed: false, version: "", manifest_version: null, latest_available_version: null, runtime_version_mismatch: false,
  app_configured: false, app_id: null, app_brand: null, skills_expected: 0, skills_installed: 0, installed_skills: [],
  enabled_skills: [], install_path: "",
  cli: { available: false, path: null, version: null, error: "The Lark integration is not offered by this gateway" },
  auth: { status: "unavailable", message: "The Lark integration is not offered by this gateway", user: null, verified: false },
  sandbox_runtime_mode: "none", sandbox_runtime_ready: false, sandbox_runtime_detail: "The Lark integration is not offered by this gateway",
});

type ThreadParams = { Params: { thread_id: string } };

/** Registers the feature routes under `/api`. */
export async function webFeatureRoutes(app: FastifyInstance): Promise<void> {
  const { getAppConfig } = app.deerflow;
  const suggestionsConfig = () => SuggestionsConfig.parse((getAppConfig() as Record<string, unknown>).suggestions ?? {});

  app.get("/features", { schema: doc("features", "Optional features and whether they are on") }, async () => ({
    agents_api: { enabled: Boolean(getAppConfig().agents_api?.enabled) },
    browser_control: { enabled: false },
    mcp_tasks: { enabled: app.deerflow.mcpTasks !== null },
  }));

  app.get("/suggestions/config", { schema: doc("features", "Follow-up suggestions configuration") }, async () => {
    const cfg = suggestionsConfig();
    return { enabled: cfg.enabled, max_suggestions: cfg.max_suggestions };
  });

  app.post<ThreadParams>("/threads/:thread_id/suggestions", { schema: doc("features", "Generate follow-up questions with the configured model", { body: SuggestionsBody }) }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    const body = validInput(SuggestionsBody, request.body);
    const cfg = suggestionsConfig();
    if (!cfg.enabled || body.messages.length === 0) return { suggestions: [] };
    const n = Math.min(body.n, cfg.max_suggestions);
    const conversation = body.messages
      .map((m) => `${/^(user|human)$/i.test(m.role) ? "User" : /^(assistant|ai)$/i.test(m.role) ? "Assistant" : m.role}: ${m.content.trim()}`)
      .join("\n");
    const answer = await runOneshot(getAppConfig(), body.model_name ?? cfg.model_name, SUGGESTIONS_SYSTEM(n), conversation);
    // Upstream answers an empty list when the model's answer is not a JSON list of strings.
    return { suggestions: (parseJsonStringList(answer) ?? []).slice(0, n) };
  });

  app.post("/input-polish", { schema: doc("features", "Rewrite a composer draft with the configured model", { body: PolishBody }) }, async (request) => {
    const body = validInput(PolishBody, request.body);
    const cfg = InputPolishConfig.parse((getAppConfig() as Record<string, unknown>).input_polish ?? {});
    if (!cfg.enabled) throw new NotFoundError("Input polishing is disabled");
    const draft = body.text;
    if (!draft.trim()) return { rewritten_text: draft, changed: false };
    // Code points, as upstream's len(); the stripped draft is what the model gets.
    if (Array.from(draft.trim()).length > cfg.max_chars) throw new BadRequestError(`Input text exceeds ${cfg.max_chars} characters`);
    const locale = body.locale?.trim() || "same language as the draft";
    const rewritten = await runOneshot(getAppConfig(), body.model_name ?? cfg.model_name, POLISH_SYSTEM, `Locale hint: ${locale}\n\nDraft:\n${draft}`);
    if (!rewritten) return { rewritten_text: draft, changed: false };
    return { rewritten_text: rewritten, changed: rewritten !== draft };
  });


  // Lark / Feishu: a status that reads "not installed, CLI unavailable".
  app.get("/integrations/lark/status", async () => disabledLarkStatus());
  for (const action of ["install", "config/start", "config/complete", "config/credentials", "auth/start", "auth/complete"]) {
    app.post(`/integrations/lark/${action}`, async () => { throw new NotOfferedError("The Lark integration"); });
  }

  // Browser control: off in /features. (MCP background tasks: routes/mcp-tasks.ts.)
  app.post("/threads/:thread_id/browser/navigate", async () => { throw new NotOfferedError("Browser control"); });
}
