// Which chat-model `use:` paths this gateway knows: DeerFlow's Python provider paths and what each maps to, the
// providers it refuses (they need a vendor CLI's local sign-in), and the load-time check that names the nearest
// known path for a misspelt one. Pure data and string checks: the config loader imports it, nothing here imports a
// provider package.
import { editDistance } from "../config/config-keys.js";

/** The extension of this build's own modules: `.ts` from sources (tsx, vitest), `.js` from `dist/` (`npm start`). */
const OWN_EXT = import.meta.url.endsWith(".ts") ? "ts" : "js";

/** The module holding the OpenAI-compatible adapters (openai-compatible.ts), as a `use:` module alias. */
export const OPENAI_COMPATIBLE_MODULE = "deerflow-gateway/openai-compatible";
/** Its file URL; a separate module so `@langchain/openai` loads only when an entry uses one of its classes. */
export const OPENAI_COMPATIBLE_URL = new URL(`./openai-compatible.${OWN_EXT}`, import.meta.url).href;

/**
 * DeerFlow's model `use:` paths mapped one by one to this gateway's classes. The patched OpenAI-compatible
 * providers of upstream `deerflow/models/` (DeepSeek, Gemini-over-gateway, MiMo, StepFun, MiniMax, vLLM, MindIE)
 * become `ChatOpenAI` subclasses with the same request/response adjustments; `langchain_deepseek:ChatDeepSeek`
 * (upstream's base of the DeepSeek patch) gets the DeepSeek adapter too.
 */
export const MODEL_PATH_ALIASES: Readonly<Record<string, string>> = {
  "langchain_deepseek:ChatDeepSeek": `${OPENAI_COMPATIBLE_MODULE}:PatchedChatDeepSeek`,
  "deerflow.models.patched_deepseek:PatchedChatDeepSeek": `${OPENAI_COMPATIBLE_MODULE}:PatchedChatDeepSeek`,
  "deerflow.models.patched_openai:PatchedChatOpenAI": `${OPENAI_COMPATIBLE_MODULE}:PatchedChatOpenAI`,
  "deerflow.models.patched_mimo:PatchedChatMiMo": `${OPENAI_COMPATIBLE_MODULE}:PatchedChatMiMo`,
  "deerflow.models.patched_stepfun:PatchedChatStepFun": `${OPENAI_COMPATIBLE_MODULE}:PatchedChatStepFun`,
  "deerflow.models.patched_minimax:PatchedChatMiniMax": `${OPENAI_COMPATIBLE_MODULE}:PatchedChatMiniMax`,
  "deerflow.models.vllm_provider:VllmChatModel": `${OPENAI_COMPATIBLE_MODULE}:VllmChatModel`,
  "deerflow.models.mindie_provider:MindIEChatModel": `${OPENAI_COMPATIBLE_MODULE}:MindIEChatModel`,
};

/**
 * Upstream providers refused at load, and why: they authenticate with a vendor CLI's local sign-in (files in the
 * user's home directory, OAuth tokens of a subscription), which a server cannot hold.
 */
export const REFUSED_MODEL_PATHS: Readonly<Record<string, string>> = {
  "deerflow.models.openai_codex_provider:CodexChatModel":
    "it signs in with the Codex CLI's ChatGPT login (~/.codex/auth.json), a local credential deerflow-gateway does not use; use langchain_openai:ChatOpenAI with an OpenAI API key instead",
  "deerflow.models.claude_provider:ClaudeChatModel":
    "it signs in with Claude Code's OAuth credentials (~/.claude/.credentials.json or CLAUDE_CODE_OAUTH_TOKEN), a local credential deerflow-gateway does not use; use langchain_anthropic:ChatAnthropic with an Anthropic API key instead",
};

/** Every chat-model path a config may name: DeerFlow's, their npm counterparts, and the gateway's own. */
export const KNOWN_MODEL_PATHS: readonly string[] = [
  "langchain_openai:ChatOpenAI", "langchain_openai:AzureChatOpenAI", "langchain_anthropic:ChatAnthropic",
  "langchain_google_genai:ChatGoogleGenerativeAI", "langchain_ollama:ChatOllama", ...Object.keys(MODEL_PATH_ALIASES),
  "@langchain/openai:ChatOpenAI", "@langchain/openai:AzureChatOpenAI", "@langchain/anthropic:ChatAnthropic",
  "@langchain/google-genai:ChatGoogleGenerativeAI", "@langchain/ollama:ChatOllama", "deerflow-gateway:ScriptedChatModel",
  ...Object.values(MODEL_PATH_ALIASES).filter((v, i, all) => all.indexOf(v) === i),
];

/** A dotted Python module (`deerflow.models.x`) or a `langchain_*` one: no npm install provides either. */
function isPythonModule(module: string): boolean {
  return !module.includes("/") && (/^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+$/i.test(module) || /^langchain_[a-z0-9_]+$/i.test(module));
}

/** The known path nearest to `use` (case-insensitive edit distance) and its distance. */
export function nearestModelPath(use: string): { path: string; distance: number } {
  let best = { path: KNOWN_MODEL_PATHS[0], distance: Infinity };
  for (const known of [...KNOWN_MODEL_PATHS, ...Object.keys(REFUSED_MODEL_PATHS)]) {
    const distance = editDistance(use.toLowerCase(), known.toLowerCase());
    if (distance < best.distance) best = { path: known, distance };
  }
  return best;
}

/** Python modules the resolver maps as a whole (`langchain_openai` -> `@langchain/openai`): any export of theirs may be used. */
const ALIASED_PYTHON_MODULES = new Set(["langchain_openai", "langchain_anthropic", "langchain_google_genai", "langchain_ollama"]);

/**
 * Why a model entry's `use:` cannot start, or null when it may: a refused provider (with the reason), a path a few
 * edits from a known one (a typo: names the nearest), or a Python module path no npm package provides (names the
 * nearest known path). Other paths (npm packages, files) are left to the import, reported by `/health`.
 */
export function modelPathProblem(use: string): string | null {
  const refused = REFUSED_MODEL_PATHS[use];
  if (refused) return `use '${use}' is not offered: ${refused}`;
  if (KNOWN_MODEL_PATHS.includes(use)) return null;
  const near = nearestModelPath(use);
  const module = use.slice(0, Math.max(0, use.lastIndexOf(":")));
  // Up to 3 edits is a typo (`langchain_antropic`); `AzureChatOpenAI` vs `ChatOpenAI` (5) is a different class.
  if (near.distance <= 3) return `use '${use}' is not a known model provider path; did you mean '${near.path}'?`;
  if (isPythonModule(module) && !ALIASED_PYTHON_MODULES.has(module)) {
    return `use '${use}' is a Python module path deerflow-gateway does not provide; the nearest known provider path is '${near.path}'`;
  }
  return null;
}
