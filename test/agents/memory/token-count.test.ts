import { Tiktoken } from "js-tiktoken/lite";
import cl100k from "js-tiktoken/ranks/cl100k_base";
import { describe, expect, it } from "vitest";
import { formatMemoryForInjection, tokenCounter } from "../../../src/agents/memory/injection.js";
import { emptyMemory } from "../../../src/agents/memory/memory-document.js";
import { createPieceCounter, LONG_PIECE_UNITS } from "../../../src/agents/memory/token-count.js";

const exact = new Tiktoken(cl100k);
/** Wall time of `fn` in ms and its result. */
const timed = <T>(fn: () => T): [T, number] => {
  const start = performance.now();
  const value = fn();
  return [value, performance.now() - start];
};

describe("bounded tiktoken counting (memory budget)", () => {
  it("gives js-tiktoken's exact count for ordinary text, cut into runs at piece boundaries", async () => {
    const count = await tokenCounter("tiktoken");
    const text = "The quick brown fox jumps over the lazy dog, 12345 times!\n\n  Ünïcödé 记忆记忆 🙂 tab\there. ".repeat(300);
    expect(count(text)).toBe(exact.encode(text).length);
    expect(count("hello world")).toBe(2);
  });

  it("counts a 100,000-character word, whitespace run or punctuation run in linear time, as an estimate", async () => {
    const count = await tokenCounter("tiktoken");
    for (const piece of ["x".repeat(100_000), " ".repeat(100_000), "!".repeat(100_000), "记".repeat(100_000)]) {
      // The unbounded byte-pair merge needs over a minute for 20,000 characters; the bound is generous for a busy CI.
      const [tokens, ms] = timed(() => count(`- Work: ${piece}`));
      expect(ms, JSON.stringify(piece.slice(0, 3))).toBeLessThan(2_000);
      expect(tokens).toBeGreaterThanOrEqual(20_000);
    }
  });

  it("counts special-token text as plain text instead of throwing", async () => {
    const count = await tokenCounter("tiktoken");
    expect(count("ends with <|endoftext|>")).toBe(exact.encode("ends with <|endoftext|>", [], []).length);
  });

  it("stops once past a limit, so the work follows the budget and not the text", () => {
    const encoded: number[] = [];
    const encoder = { encode: (text: string) => (encoded.push(text.length), exact.encode(text, [], [])) };
    const count = createPieceCounter(encoder, cl100k.pat_str);
    const text = "word ".repeat(200_000);
    expect(count(text, 50)).toBeGreaterThan(50);
    expect(encoded.reduce((a, b) => a + b, 0)).toBeLessThan(4_000);
    expect(Math.max(...encoded)).toBeLessThanOrEqual(1024 + LONG_PIECE_UNITS);
  });

  it("injects memory whose summaries are one 100,000-character word within the budget, cut from the end", async () => {
    const count = await tokenCounter("tiktoken");
    const doc = emptyMemory();
    doc.user.workContext = { summary: "a".repeat(100_000), updatedAt: "" };
    doc.history.recentMonths = { summary: `${"b".repeat(50_000)} ${"c".repeat(50_000)}`, updatedAt: "" };
    doc.facts.push({ id: "f", content: "Keeps this fact", category: "correction", confidence: 1, createdAt: "", source: "manual" });
    const options = { maxTokens: 2000, count, guaranteedCategories: ["correction"], guaranteedTokenBudget: 50 };
    const [text, ms] = timed(() => formatMemoryForInjection(doc, options));
    expect(ms).toBeLessThan(2_000);
    expect(count(text)).toBeLessThanOrEqual(2050);
    expect(text.length).toBeGreaterThan(1000);
    expect(/^User Context:\n- Work: a+\n\.\.\.\n\nFacts:\n- \[correction \| 1\.00\] Keeps this fact$/.test(text), text.slice(0, 80)).toBe(true);
  });
});
