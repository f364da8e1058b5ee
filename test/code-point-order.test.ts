import { describe, expect, it } from "vitest";
import { compareCodePoints } from "../src/code-point-order.js";

describe("compareCodePoints", () => {
  it("orders as Python's sorted(): by code point, capitals first, astral characters after U+FFFD", () => {
    const names = ["b", "é", "\u{1F600}", "B", "_x", "a", "\uFFFD", "ab", "", "\uE000"];
    // Python: sorted(["b", "é", "😀", "B", "_x", "a", "\ufffd", "ab", "", "\ue000"])
    expect([...names].sort(compareCodePoints)).toEqual(["", "B", "_x", "a", "ab", "b", "é", "\uE000", "\uFFFD", "\u{1F600}"]);
  });

  it("is 0 only for equal strings and antisymmetric", () => {
    const pairs: [string, string][] = [["a", "b"], ["a", "ab"], ["\uFFFD", "\u{1F600}"], ["\u{1F600}", "\u{1F601}"], ["Z", "a"]];
    for (const [x, y] of pairs) {
      expect(Math.sign(compareCodePoints(x, y))).toBe(-1);
      expect(Math.sign(compareCodePoints(y, x))).toBe(1);
    }
    expect(compareCodePoints("same", "same")).toBe(0);
  });
});
