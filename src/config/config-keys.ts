// Every top-level key of DeerFlow's config.example.yaml, and what this gateway does with it: implemented, or not
// offered (refused when the section turns its feature on). One row per key: adding a key is a one-line change.
import type { z } from "zod";

/** What a not-offered section is off for: the predicate over its value and the whole raw config. */
type Off = (value: unknown, raw: Record<string, unknown>) => boolean;

/** How the gateway treats a top-level key. */
export type KeyRule =
  | { status: "implemented" }
  /** A feature this gateway does not offer: accepted quietly while `off` holds, else the start is refused. */
  | { status: "not_offered"; feature: string; off: Off; howToTurnOff: string };

const obj = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const isEmpty = (v: unknown) => v === null || v === undefined || (Array.isArray(v) && v.length === 0) || (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);

const IMPLEMENTED: KeyRule = { status: "implemented" };
const notOffered = (feature: string, off: Off, howToTurnOff: string): KeyRule => ({ status: "not_offered", feature, off, howToTurnOff });
/** The IM platforms src/channels/ runs: any other `channels.<name>` turned on is refused. */
const OFFERED_CHANNELS = new Set(["telegram", "slack", "feishu", "discord", "dingtalk", "wecom"]);

/**
 * The table. `implemented` keys include those of this round's parallel work (the agent-quality middlewares'
 * `tool_output`, `read_before_write`, `tool_progress`, `llm_call`, `circuit_breaker`); a key not listed is refused
 * (with the closest known key suggested).
 */
export const CONFIG_KEYS: Readonly<Record<string, KeyRule>> = {
  config_version: IMPLEMENTED, log_level: IMPLEMENTED, max_recursion_limit: IMPLEMENTED, models: IMPLEMENTED, tools: IMPLEMENTED,
  tool_groups: IMPLEMENTED, agents_api: IMPLEMENTED, checkpointer: IMPLEMENTED, token_usage: IMPLEMENTED, token_budget: IMPLEMENTED,
  loop_detection: IMPLEMENTED, tool_search: IMPLEMENTED, sandbox: IMPLEMENTED, skills: IMPLEMENTED, title: IMPLEMENTED,
  summarization: IMPLEMENTED, memory: IMPLEMENTED, subagents: IMPLEMENTED, database: IMPLEMENTED, stream_bridge: IMPLEMENTED,
  uploads: IMPLEMENTED, safety_finish_reason: IMPLEMENTED, limits: IMPLEMENTED, auth: IMPLEMENTED, suggestions: IMPLEMENTED,
  skill_evolution: IMPLEMENTED, input_polish: IMPLEMENTED, guardrails: IMPLEMENTED, authorization: IMPLEMENTED,
  run_events: IMPLEMENTED, agent_storage: IMPLEMENTED, run_ownership: IMPLEMENTED,
  mcp_tasks: IMPLEMENTED, // MCP background tasks (issue 49; src/runtime/mcp-tasks/)
  scheduler: IMPLEMENTED,
  // This round's agent-quality middlewares (issue 46 item 3).
  tool_output: IMPLEMENTED, read_before_write: IMPLEMENTED, tool_progress: IMPLEMENTED, llm_call: IMPLEMENTED, circuit_breaker: IMPLEMENTED,
  // Not offered: accepted while they leave their feature off (as DeerFlow's example does).
  logging: notOffered("request trace correlation (logging.enhance)", (v) => obj(obj(v).enhance).enabled !== true, "set logging.enhance.enabled: false"),
  // Skill safety scanning guards skill writes; the only skill writes here are skill_manage's (skill_evolution).
  skill_scan: notOffered("deterministic skill scanning of agent-managed skill writes", (v, raw) => obj(v).enabled === false || obj(raw.skill_evolution).enabled !== true, "set skill_scan.enabled: false, or leave skill_evolution off"),
  // IM channels (issue 48): Telegram, Slack, Feishu/Lark, Discord and DingTalk run (src/channels/); any other platform is refused when enabled.
  channels: notOffered("IM channels other than Telegram, Slack, Feishu, Discord, DingTalk and WeCom (WeChat, Buzz)", (v) => Object.entries(obj(v)).every(([k, e]) => OFFERED_CHANNELS.has(k) || typeof e !== "object" || e === null || obj(e).enabled !== true), "set enabled: false on every channel but telegram, slack, feishu, discord, dingtalk and wecom"),
  channel_connections: notOffered("IM channel connections other than Telegram, Slack, Feishu, Discord, DingTalk and WeCom", (v) => Object.entries(obj(v)).every(([k, e]) => OFFERED_CHANNELS.has(k) || typeof e !== "object" || e === null || obj(e).enabled !== true), "set enabled: false on every provider but telegram, slack, feishu, discord, dingtalk and wecom"),
  // Dedupe ids: the channel store (SQLite, or PostgreSQL with database.backend: postgres), Redis when scaled out, or memory.
  dedupe_storage: IMPLEMENTED,
  acp_agents: notOffered("ACP agents (external coding agents as subagents)", isEmpty, "remove the acp_agents entries"),
  plugins: notOffered("extension packages (plugins)", (v) => !Array.isArray(v) || v.every((p) => obj(p).enabled === false), "remove the plugins entries or set enabled: false"),
  extensions: notOffered("config-declared agent middlewares (extensions.middlewares)", (v) => Object.values(obj(v)).every(isEmpty), "remove the extensions entries (MCP servers and skills go in extensions_config.json)"),
};

/**
 * Optimal-string-alignment distance (Levenshtein with adjacent transpositions as one edit): `enabeld` is one edit
 * from `enabled`.
 */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The known key closest to `key` when it looks like a typo of it (at most 1 edit per 4 characters, 1 at least), else null. */
export function closestKey(key: string, known: Iterable<string>): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const distance = editDistance(key.toLowerCase(), k.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [k, distance];
  }
  return best !== null && bestDistance > 0 && bestDistance <= Math.max(1, Math.floor(key.length / 4)) ? best : null;
}

/** The keys of a zod object schema under its wrappers (default, optional, nullable, pipe/transform), or null. */
export function objectKeys(schema: z.ZodType | undefined): string[] | null {
  let def = (schema as { _zod?: { def?: Record<string, unknown> } } | undefined)?._zod?.def;
  for (let i = 0; def && i < 10; i++) {
    if (def.type === "object") return Object.keys(def.shape as object);
    const next = (def.innerType ?? (def.type === "pipe" ? def.in : undefined)) as { _zod?: { def?: Record<string, unknown> } } | undefined;
    def = next?._zod?.def;
  }
  return null;
}

/** One key the start is refused for. */
export interface KeyProblem {
  /** The key path (`scheduler`, `guardrails.enabeld`). */
  key: string;
  message: string;
}

/**
 * Checks the raw top-level mapping of config.yaml against {@link CONFIG_KEYS}: a key no row lists is refused (with
 * the closest known key when it looks like a typo); a not-offered section that turns its feature on is refused,
 * naming the key and the feature; for implemented sections with an object schema (`sections`), a key one level down
 * that is a typo of a known sibling (`guardrails.enabeld`) is refused with the suggestion. Other unknown keys inside
 * a section are kept (DeerFlow's tuning knobs this gateway has no use for, e.g. `database.pool_recycle`).
 * @returns the problems, in file order (empty when the config is accepted).
 */
export function checkConfigKeys(raw: Record<string, unknown>, sections: Readonly<Record<string, z.ZodType>>): KeyProblem[] {
  const problems: KeyProblem[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const rule = CONFIG_KEYS[key];
    if (!rule) {
      const near = closestKey(key, Object.keys(CONFIG_KEYS));
      problems.push({ key, message: near ? `'${key}' is not a config key; did you mean '${near}'?` : `'${key}' is not a DeerFlow or deerflow-gateway config key` });
      continue;
    }
    if (rule.status === "not_offered") {
      if (!rule.off(value, raw)) problems.push({ key, message: `'${key}' turns on ${rule.feature}, which deerflow-gateway does not offer (${rule.howToTurnOff}, or remove the section)` });
      continue;
    }
    const known = objectKeys(sections[key]);
    if (!known || typeof value !== "object" || value === null || Array.isArray(value)) continue;
    for (const inner of Object.keys(value)) {
      if (known.includes(inner)) continue;
      const near = closestKey(inner, known);
      if (near) problems.push({ key: `${key}.${inner}`, message: `'${key}.${inner}' is not a config key; did you mean '${key}.${near}'?` });
    }
  }
  return problems;
}
