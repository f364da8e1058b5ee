import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAppConfigText } from "../../src/config/app-config.js";
import { KNOWN_TOP_LEVEL_KEYS, parseAppConfig } from "../../src/config/schema.js";

// Issue 13 item 16: config.example.yaml claims to document every key; it must, and its values must be the defaults.
const file = path.resolve(import.meta.dirname, "../../config/config.example.yaml");
const text = readFileSync(file, "utf8");

describe("config/config.example.yaml", () => {
  it("documents every top-level key the gateway reads (as a key or a commented key)", () => {
    const missing = KNOWN_TOP_LEVEL_KEYS.filter((key) => !new RegExp(`^(# )?${key}:`, "m").test(text));
    expect(missing).toEqual([]);
  });

  it("loads, and the sections it sets hold the defaults", () => {
    const config = parseAppConfigText(text, file);
    const defaults = parseAppConfig({}) as Record<string, unknown>;
    for (const key of ["title", "summarization", "memory", "tool_search", "token_budget", "skills", "subagents", "safety_finish_reason"]) {
      expect((config as Record<string, unknown>)[key], key).toEqual(defaults[key]);
    }
  });
});
