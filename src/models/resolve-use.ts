// Port of DeerFlow reflection/resolvers.py: `use:` strings resolved by dynamic import.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { DeerflowError } from "../errors.js";
import { MODEL_PATH_ALIASES, OPENAI_COMPATIBLE_MODULE, OPENAI_COMPATIBLE_URL } from "./model-catalog.js";

/** The extension of this build's own modules: `.ts` from sources (tsx, vitest), `.js` from `dist/` (`npm start`). */
const OWN_EXT = import.meta.url.endsWith(".ts") ? "ts" : "js";

/**
 * DeerFlow's Python `use:` paths and their TypeScript counterparts. A whole `module:Export` entry maps one path;
 * a bare module entry renames the module and keeps the export name. DeerFlow's patched OpenAI-compatible providers
 * (DeepSeek, MiMo, StepFun, MiniMax, vLLM, MindIE, ...) map to the `ChatOpenAI` subclasses of openai-compatible.ts.
 */
export const USE_ALIASES: Readonly<Record<string, string>> = {
  langchain_openai: "@langchain/openai",
  langchain_anthropic: "@langchain/anthropic",
  langchain_google_genai: "@langchain/google-genai",
  langchain_ollama: "@langchain/ollama",
  // DeerFlow's patched OpenAI-compatible providers (model-catalog.ts): ChatOpenAI subclasses with upstream's fixes.
  ...MODEL_PATH_ALIASES,
  [OPENAI_COMPATIBLE_MODULE]: OPENAI_COMPATIBLE_URL,
  "deerflow-gateway": new URL(`./index.${OWN_EXT}`, import.meta.url).href,
  // Sandbox tools and provider (src/tools/sandbox/index.ts), also under DeerFlow's Python paths.
  "deerflow-gateway/sandbox": new URL(`../tools/sandbox/index.${OWN_EXT}`, import.meta.url).href,
  "deerflow.sandbox.tools:bash_tool": "deerflow-gateway/sandbox:bashTool",
  "deerflow.sandbox.tools:ls_tool": "deerflow-gateway/sandbox:lsTool",
  "deerflow.sandbox.tools:read_file_tool": "deerflow-gateway/sandbox:readFileTool",
  "deerflow.sandbox.tools:glob_tool": "deerflow-gateway/sandbox:globTool",
  "deerflow.sandbox.tools:grep_tool": "deerflow-gateway/sandbox:grepTool",
  "deerflow.sandbox.tools:write_file_tool": "deerflow-gateway/sandbox:writeFileTool",
  "deerflow.sandbox.tools:str_replace_tool": "deerflow-gateway/sandbox:strReplaceTool",
  "deerflow.sandbox.local:LocalSandboxProvider": "deerflow-gateway/sandbox:LocalSandboxProvider",
  // Research tools (src/web/index.ts); DeerFlow's `deerflow.community.<provider>.tools:<tool>_tool` paths map to
  // the same exports by COMMUNITY_TOOL_PREFIX below (the tool picks the provider from the entry's `use:`).
  "deerflow-gateway/web": new URL(`../web/index.${OWN_EXT}`, import.meta.url).href,
};

/** DeerFlow's community tool modules: `deerflow.community.<provider>.tools:<export>` -> `deerflow-gateway/web:<export>`. */
const COMMUNITY_TOOL_PREFIX = /^deerflow\.community\.[a-z0-9_]+\.tools:([A-Za-z0-9_]+)$/;

/** A `use:` path that cannot be resolved: bad format, missing module, missing export, or wrong type. */
export class UseResolutionError extends DeerflowError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("model_unresolvable", message, options);
  }
}

/** Splits `module:Export` at the last colon and applies {@link USE_ALIASES}. */
export function normalizeUsePath(use: string): { module: string; exportName: string } {
  const community = COMMUNITY_TOOL_PREFIX.exec(use);
  const aliased = USE_ALIASES[use] ?? (community ? `deerflow-gateway/web:${community[1]}` : use);
  const idx = aliased.lastIndexOf(":");
  // A Windows drive letter or a URL scheme is not an export separator.
  if (idx <= 0 || idx === aliased.length - 1 || /^[a-z]+:\/\/[^:]*$/i.test(aliased)) {
    throw new UseResolutionError(`'${use}' doesn't look like a variable path; expected 'module:Export', e.g. 'langchain_openai:ChatOpenAI'`);
  }
  const mod = aliased.slice(0, idx);
  return { module: USE_ALIASES[mod] ?? mod, exportName: aliased.slice(idx + 1) };
}

/** Successful resolutions, keyed by specifier and export: the agent is rebuilt per request, imports are not. */
const resolved = new Map<string, unknown>();

/** A dotted Python module path (`deerflow.community.x.tools`), which no npm install can provide. */
function looksLikePythonPath(module: string): boolean {
  return /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+$/i.test(module) && !module.includes("/");
}

/** npm package that provides `specifier` (for the install hint). */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/**
 * Imports the export named by a `use:` path. Module specifiers starting with `.` or `/` are files, resolved
 * against `baseDir` (callers pass the project root); others are packages or aliases.
 * @throws UseResolutionError with an install hint when the module is missing, or naming the missing export.
 */
export async function resolveUse(use: string, baseDir = process.cwd()): Promise<unknown> {
  const { module, exportName } = normalizeUsePath(use);
  const specifier = module.startsWith(".") || path.isAbsolute(module) ? pathToFileURL(path.resolve(baseDir, module)).href : module;
  const key = `${specifier}:${exportName}`;
  if (resolved.has(key)) return resolved.get(key);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(specifier)) as Record<string, unknown>;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e?.code === "ERR_MODULE_NOT_FOUND" || e?.code === "MODULE_NOT_FOUND") {
      const hint = specifier.startsWith("file:") ? "" : looksLikePythonPath(module) ? " It looks like a DeerFlow Python module path, which deerflow-gateway does not implement." : ` Install it with \`npm install ${packageOf(module)}\`.`;
      throw new UseResolutionError(`Could not import module ${module} (from use: '${use}').${hint}`, { cause: err });
    }
    throw new UseResolutionError(`Error importing module ${module} (from use: '${use}'): ${e?.message ?? String(err)}`, { cause: err });
  }
  if (!(exportName in mod) || mod[exportName] === undefined) {
    throw new UseResolutionError(`Module ${module} does not define a ${exportName} attribute/class (from use: '${use}')`);
  }
  resolved.set(key, mod[exportName]);
  return mod[exportName];
}

/**
 * Resolves a `use:` path to a class that extends `base`.
 * @throws UseResolutionError "... is not a subclass of <Base>" when the export is not such a class.
 */
export async function resolveClass<T>(use: string, base: abstract new (...args: never[]) => T, baseDir?: string): Promise<new (fields: Record<string, unknown>) => T> {
  const value = await resolveUse(use, baseDir);
  if (typeof value !== "function" || !(value.prototype instanceof base || value === base)) {
    throw new UseResolutionError(`${use} is not a subclass of ${base.name}`);
  }
  return value as new (fields: Record<string, unknown>) => T;
}
