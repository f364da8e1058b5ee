import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { searchCatalog } from "../../../src/tools/builtins/tool-search.js";
import { grepTool } from "../../../src/tools/sandbox/index.js";
import { createSandboxFixture, type SandboxFixture } from "./helpers.js";

let fx: SandboxFixture;
beforeEach(() => {
  fx = createSandboxFixture();
});
afterEach(() => fx.cleanup());

type Invocable = { invoke(input: unknown, config: unknown): Promise<unknown> };
const grep = (input: Record<string, unknown>) => (grepTool as unknown as Invocable).invoke({ description: "test", ...input }, fx.config()) as Promise<string>;
const workspace = (name: string, text: string) => writeFileSync(path.join(fx.sandbox.dirs.workspace, name), text);
/** A line on which a backtracking engine needs about 4^(n/2) steps for `(a+)+$`: hours at n = 40. */
const EVIL_LINE = `${"a".repeat(40)}!`;

describe("grep runs the caller's pattern in linear time (RE2)", () => {
  it("answers a catastrophic pattern at once, with the usual result text", async () => {
    workspace("evil.txt", `${EVIL_LINE}\n${"a".repeat(40)}\n`);
    const start = performance.now();
    const out = await grep({ pattern: "(a+)+$", path: "/mnt/user-data/workspace" });
    expect(performance.now() - start).toBeLessThan(2_000);
    expect(out).toBe(`Found 1 matches under /mnt/user-data/workspace\n/mnt/user-data/workspace/evil.txt:2: ${"a".repeat(40)}`);
  });

  it("keeps the regex, literal and case semantics of upstream's grep", async () => {
    workspace("notes.md", "Alpha beta\nalpha (gamma)\nDELTA\n");
    expect(await grep({ pattern: "^alpha", path: "/mnt/user-data/workspace" })).toBe("Found 2 matches under /mnt/user-data/workspace\n/mnt/user-data/workspace/notes.md:1: Alpha beta\n/mnt/user-data/workspace/notes.md:2: alpha (gamma)");
    expect(await grep({ pattern: "^alpha", path: "/mnt/user-data/workspace", case_sensitive: true })).toBe("Found 1 matches under /mnt/user-data/workspace\n/mnt/user-data/workspace/notes.md:2: alpha (gamma)");
    expect(await grep({ pattern: "(gamma)", path: "/mnt/user-data/workspace/notes.md", literal: true })).toContain("notes.md:2: alpha (gamma)");
    expect(await grep({ pattern: "d[e]l\\w+", path: "/mnt/user-data/workspace" })).toContain("notes.md:3: DELTA");
    expect(await grep({ pattern: "zeta", path: "/mnt/user-data/workspace" })).toBe("No matches found under /mnt/user-data/workspace");
  });

  it("answers a pattern the engine refuses (invalid, backreference, lookaround) as an Error result", async () => {
    workspace("a.txt", "aa\n");
    for (const pattern of ["[", "(a)\\1", "a(?=a)"]) {
      expect(await grep({ pattern, path: "/mnt/user-data/workspace" }), pattern).toMatch(/^Error: Invalid regex pattern: /);
    }
  });
});

describe("tool_search runs the model's query in linear time", () => {
  it("searches descriptions with a catastrophic pattern at once", () => {
    const schemas = [{ name: "evil", description: EVIL_LINE, parameters: {} }, { name: "fine", description: "a".repeat(40), parameters: {} }];
    const start = performance.now();
    expect(searchCatalog(schemas, "(a+)+$").map((s) => s.name)).toEqual(["fine"]);
    expect(performance.now() - start).toBeLessThan(2_000);
    expect(searchCatalog(schemas, "(a)\\1").map((s) => s.name)).toEqual([]);
  });
});
