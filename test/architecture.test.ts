// Layers the code must keep (SDK core and building blocks below the app layer, routes above src/): reads every import
// of src/ and routes/ and fails on an edge that crosses a layer the wrong way, or on any import cycle. A new file is
// covered automatically by the folder it lives in. Imports are read with the TypeScript parser, so every form counts:
// `import`/`export ... from` (type-only too), dynamic `import("...")` and `import("...")` types.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function walk(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.posix.join(dir, name);
    return statSync(path.join(ROOT, rel)).isDirectory() ? walk(rel) : rel.endsWith(".ts") ? [rel] : [];
  });
}

/** One import of a file: the module specifier and whether it is erased at compile time (type-only). */
interface ImportRef {
  spec: string;
  typeOnly: boolean;
}

/** True when an `import` declaration binds nothing at run time (`import type`, or only `type` named bindings). */
function isTypeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import "x"`: a side effect, so a value edge
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  return !clause.name && !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
}

/** Every module specifier `text` (the source of `file`) imports, in any form. */
function importRefsOf(file: string, text: string): ImportRef[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const refs: ImportRef[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      refs.push({ spec: node.moduleSpecifier.text, typeOnly: isTypeOnlyImport(node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause;
      const typeOnly = node.isTypeOnly || (!!named && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly));
      refs.push({ spec: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      refs.push({ spec: node.moduleReference.expression.text, typeOnly: node.isTypeOnly });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      refs.push({ spec: node.arguments[0].text, typeOnly: false });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      refs.push({ spec: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return refs;
}

/** A relative specifier of `file`, resolved to a repo path (`.js` written for `.ts`, as NodeNext wants). */
function resolveSpec(file: string, spec: string): string {
  return path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, ".ts");
}

const parsed = new Map<string, ImportRef[]>();
/** The imports of a file of the tree, parsed once for all the rules. */
function treeRefs(file: string): ImportRef[] {
  let refs = parsed.get(file);
  if (!refs) parsed.set(file, (refs = importRefsOf(file, readFileSync(path.join(ROOT, file), "utf8"))));
  return refs;
}

/**
 * Relative imports of a file (every form: static, `export ... from`, dynamic `import()`, `import("...")` types),
 * resolved to repo paths. With `valueOnly`, imports erased at compile time (type-only) are skipped.
 */
function importsOf(file: string, valueOnly = false, text?: string): string[] {
  const refs = text === undefined ? treeRefs(file) : importRefsOf(file, text);
  return refs
    .filter((r) => r.spec.startsWith(".") && !(valueOnly && r.typeOnly))
    .map((r) => resolveSpec(file, r.spec));
}

/**
 * The import cycles of a graph (file -> files it imports): one cycle per strongly connected component of more than
 * one file (or a file importing itself), each as a path `a -> b -> ... -> a` starting at its smallest file.
 * Tarjan's algorithm, recursive: import chains here are a few dozen files deep, far from the stack limit.
 */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)!.includes(v)) components.push(component);
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return components.map((component) => {
    // A shortest way back to the start inside the component (breadth first), so the message names a real cycle.
    const members = new Set(component);
    const start = [...component].sort()[0];
    const from = new Map<string, string>();
    const queue = [start];
    for (let i = 0; i < queue.length && !from.has(start); i++) {
      for (const w of graph.get(queue[i])!) {
        if (!members.has(w) || from.has(w)) continue;
        from.set(w, queue[i]);
        queue.push(w);
      }
    }
    const cycle = [start];
    for (let at = from.get(start)!; at !== start; at = from.get(at)!) cycle.unshift(at);
    cycle.unshift(start);
    return `${cycle.join(" -> ")} (${component.length} files in the cycle)`;
  });
}

const FILES = [...walk("src"), ...walk("routes")];

/** The SDK layer: builds agents from plain arguments; knows nothing of the gateway, the lead agent or config files. */
const SDK_CORE = (f: string) =>
  ["src/agents/factory.ts", "src/agents/features.ts", "src/agents/chain.ts", "src/agents/thread-state.ts", "src/agents/thread-state-reducers.ts", "src/agents/run-context.ts", "src/agents/stream-agent.ts", "src/agents/prompt-text.ts"].includes(f) ||
  f.startsWith("src/agents/middlewares/");
/** Building blocks the SDK layer and the app layer share. */
const SHARED_BLOCKS = (f: string) => f.startsWith("src/tools/") || f.startsWith("src/sandbox/") || f.startsWith("src/skills/");

const APP_OR_SERVER = (t: string) => t.startsWith("src/agents/lead-agent/") || t.startsWith("src/runtime/") || t.startsWith("routes/") || t === "src/app.ts" || t === "src/server.ts" || t === "src/gateway.ts";
const CONFIG_LOADER = (t: string) => t === "src/config/app-config.ts" || t === "src/config/watcher.ts";

/** Longest function (lines, declaration to closing brace) the run path's worker and lead-agent build may hold. */
const MAX_RUN_PATH_FUNCTION_LINES = 60;
/** The files of the run path's two longest steps, split so each function reads top to bottom in one screen. */
const ONE_SCREEN_FILES = ["src/runtime/runs/worker.ts", "src/agents/lead-agent/agent.ts", "src/agents/lead-agent/resolve-build-inputs.ts"];

/** `name (N lines)` for each function or method of `text` longer than `max` lines. */
function longFunctions(file: string, text: string, max: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.body) {
      const lines = source.getLineAndCharacterOfPosition(node.end).line - source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      if (lines > max) found.push(`${file}: ${node.name?.getText(source) ?? "(anonymous)"} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function violations(select: (f: string) => boolean, forbidden: (t: string) => boolean, valueOnly = false): string[] {
  return FILES.filter(select).flatMap((f) => importsOf(f, valueOnly).filter(forbidden).map((t) => `${f} -> ${t}`));
}

describe("architecture", () => {
  it("finds the source files (the test reads the real tree)", () => {
    expect(FILES).toContain("src/agents/factory.ts");
    expect(FILES).toContain("routes/runs.ts");
    expect(importsOf("src/runtime/runs/run-service.ts")).toContain("src/runtime/runs/worker.ts");
  });

  it("reads every form of import: value, type-only, re-export, dynamic import() and import() types", () => {
    const text = [
      'import { a } from "./value.js";',
      'import type { B } from "./type-only.js";',
      'import { type C } from "./type-named.js";',
      'import "./side-effect.js";',
      'export { d } from "./re-export.js";',
      'export type { E } from "./type-re-export.js";',
      'const f = await import("./dynamic.js");',
      'let g: import("./import-type.js").G;',
      'import { h } from "node:fs";',
    ].join("\n");
    const all = ["value", "type-only", "type-named", "side-effect", "re-export", "type-re-export", "dynamic", "import-type"].map((n) => `src/x/${n}.ts`);
    expect(importsOf("src/x/file.ts", false, text).sort()).toEqual([...all].sort());
    expect(importsOf("src/x/file.ts", true, text).sort()).toEqual(["src/x/dynamic.ts", "src/x/re-export.ts", "src/x/side-effect.ts", "src/x/value.ts"]);
  });

  it("finds a cycle of any length, and only cycles", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c", "d"]],
      ["c", ["a"]],
      ["d", []],
      ["e", ["e"]],
      ["f", ["a"]],
    ]);
    expect(importCycles(graph)).toEqual(["a -> b -> c -> a (3 files in the cycle)", "e -> e (1 files in the cycle)"]);
    expect(importCycles(new Map([["a", ["b"]], ["b", []]]))).toEqual([]);
  });

  it("has no import cycle among src/ and routes/ files (type-only and dynamic imports included)", () => {
    // Type-only edges count too: a cycle of types still ties the files' layers together and is one `type` keyword
    // away from a load-order bug; a dynamic import() is a value edge that only runs later.
    const graph = new Map(FILES.map((f) => [f, importsOf(f)]));
    expect(importCycles(graph)).toEqual([]);
  });

  it("keeps tools free of middlewares (what both need lives in a neutral module)", () => {
    expect(violations((f) => f.startsWith("src/tools/"), (t) => t.startsWith("src/agents/middlewares/"))).toEqual([]);
  });

  it("composes the app config schema from zod-only option leaves, never from a middleware or the run context", () => {
    const schemaFiles = ["src/config/schema.ts", ...importsOf("src/config/schema.ts").filter((t) => t.startsWith("src/config/"))];
    const leaf = (t: string) => !t.startsWith("src/agents/") || /-(options|config)\.ts$/.test(t);
    expect(violations((f) => schemaFiles.includes(f), (t) => !leaf(t))).toEqual([]);
  });

  it("keeps the SDK core free of the lead agent, the runtime, the routes and the config loader", () => {
    expect(violations(SDK_CORE, (t) => APP_OR_SERVER(t) || CONFIG_LOADER(t))).toEqual([]);
  });

  it("keeps the SDK core free of the app config schema at run time (each middleware owns its option schema)", () => {
    expect(violations(SDK_CORE, (t) => t === "src/config/schema.ts", true)).toEqual([]);
  });

  it("keeps tools, sandbox and skills free of the lead agent, the runtime, the routes and the config loader", () => {
    expect(violations(SHARED_BLOCKS, (t) => APP_OR_SERVER(t) || CONFIG_LOADER(t))).toEqual([]);
  });

  it("lets routes import only runtime services, config, auth, errors, the thread file services and each other", () => {
    const allowed = (t: string) =>
      t.startsWith("src/runtime/") || t.startsWith("src/config/") || t.startsWith("src/auth/") || t === "src/errors.ts" || t.startsWith("routes/") ||
      // Thread file services (uploads, artifacts): the routes' storage layer, like the runtime's stores.
      t === "src/sandbox/uploads.ts" || t === "src/sandbox/artifacts.ts";
    expect(violations((f) => f.startsWith("routes/"), (t) => !allowed(t))).toEqual([]);
  });

  it("never lets src/ import routes/ (routes import src, not the reverse), except the app that registers them", () => {
    expect(violations((f) => f.startsWith("src/") && f !== "src/app.ts", (t) => t.startsWith("routes/"))).toEqual([]);
  });

  it("keeps the SDK entry free of the server", () => {
    expect(importsOf("src/index.ts").filter((t) => APP_OR_SERVER(t) && !t.startsWith("src/agents/lead-agent/"))).toEqual([]);
  });

  it("opens every SQLite file through openSqlite (WAL, busy timeout, the bounded page cache)", () => {
    const direct = FILES.filter((f) => f !== "src/runtime/persistence/sqlite/sqlite.ts").flatMap((f) =>
      [...readFileSync(path.join(ROOT, f), "utf8").matchAll(/new Database\(([^)]*)\)/g)].filter((m) => m[1] !== '":memory:"').map((m) => `${f}: ${m[0]}`),
    );
    expect(direct).toEqual([]);
  });

  it("keeps src/runtime/ grouped by job: no folder under it holds more than 10 files directly", () => {
    const crowded = [...new Set(FILES.filter((f) => f.startsWith("src/runtime/")).map((f) => path.posix.dirname(f)))]
      .map((dir) => [dir, FILES.filter((f) => path.posix.dirname(f) === dir).length] as const)
      .filter(([, n]) => n > 10);
    expect(crowded).toEqual([]);
  });

  it("measures function length: finds a function over the limit, and not one at it", () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join("\n");
    expect(longFunctions("a.ts", `export async function long() {\n${body(61)}\n}\nfunction fits() {\n${body(60)}\n}`, 60)).toEqual(["a.ts: long (61 lines)"]);
    expect(longFunctions("b.ts", `class C {\n  m() {\n${body(70)}\n  }\n}`, 60)).toEqual(["b.ts: m (70 lines)"]);
  });

  it(`keeps the worker's and the lead-agent build's functions within one screen (${MAX_RUN_PATH_FUNCTION_LINES} lines)`, () => {
    const long = ONE_SCREEN_FILES.flatMap((f) => longFunctions(f, readFileSync(path.join(ROOT, f), "utf8"), MAX_RUN_PATH_FUNCTION_LINES));
    expect(long).toEqual([]);
  });
});
