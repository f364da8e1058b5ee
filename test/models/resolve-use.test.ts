import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { ChatOpenAI } from "@langchain/openai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalizeUsePath, resolveClass, resolveUse, UseResolutionError } from "../../src/models/resolve-use.js";
import { ScriptedChatModel } from "../../src/models/scripted-chat-model.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), "use-"));
  writeFileSync(path.join(dir, "local-tool.mjs"), "export const myTool = { name: 'my_tool' };\nexport const notAClass = 42;\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("normalizeUsePath", () => {
  it("splits at the last colon and maps DeerFlow's Python module names", () => {
    expect(normalizeUsePath("langchain_openai:ChatOpenAI")).toEqual({ module: "@langchain/openai", exportName: "ChatOpenAI" });
    expect(normalizeUsePath("a:b:C")).toEqual({ module: "a:b", exportName: "C" });
  });

  it("maps whole OpenAI-compatible DeerFlow provider paths to the gateway's ChatOpenAI adapters", async () => {
    const { module, exportName } = normalizeUsePath("deerflow.models.vllm_provider:VllmChatModel");
    expect(module).toMatch(/\/src\/models\/openai-compatible\.ts$/);
    expect(exportName).toBe("VllmChatModel");
    const cls = await resolveClass("deerflow.models.vllm_provider:VllmChatModel", BaseChatModel);
    expect(cls.prototype).toBeInstanceOf(ChatOpenAI);
  });

  it.each(["invalid.variable.path", "module:", ":Export"])("rejects %j as not looking like a variable path (CF-042)", (use) => {
    expect(() => normalizeUsePath(use)).toThrow(UseResolutionError);
    expect(() => normalizeUsePath(use)).toThrow("doesn't look like a variable path");
  });
});

describe("resolveUse (CF-042, adapted to npm)", () => {
  it("imports the named export of a package", async () => {
    expect(await resolveUse("langchain_openai:ChatOpenAI")).toBe(ChatOpenAI);
    expect(await resolveUse("deerflow-gateway:ScriptedChatModel")).toBe(ScriptedChatModel);
  });

  it("fails with an npm install hint when the module is not installed", async () => {
    const err = await resolveUse("@acme/not-installed-chat:ChatAcme").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UseResolutionError);
    expect((err as Error).message).toContain("Could not import module @acme/not-installed-chat");
    expect((err as Error).message).toContain("npm install @acme/not-installed-chat");
  });

  it("gives the package name (not a deep path) in the install hint", async () => {
    await expect(resolveUse("@acme/not-installed-pkg/sub/path:X")).rejects.toThrow("npm install @acme/not-installed-pkg`");
  });

  it("fails naming a missing export", async () => {
    await expect(resolveUse("langchain_openai:NoSuchThing")).rejects.toThrow("does not define a NoSuchThing attribute/class");
  });

  it("resolves a relative file module against the base directory, without an npm hint when it is missing", async () => {
    expect(await resolveUse("./local-tool.mjs:myTool", dir)).toEqual({ name: "my_tool" });
    const err = await resolveUse("./missing.mjs:x", dir).catch((e: unknown) => e);
    expect((err as Error).message).toContain("Could not import module ./missing.mjs");
    expect((err as Error).message).not.toContain("npm install");
  });
});

describe("resolveClass", () => {
  it("returns a class that extends the base", async () => {
    expect(await resolveClass("langchain_openai:ChatOpenAI", BaseChatModel)).toBe(ChatOpenAI);
  });

  it("fails with 'is not a subclass' for an export that is not such a class", async () => {
    await expect(resolveClass("./local-tool.mjs:notAClass", BaseChatModel, dir)).rejects.toThrow("is not a subclass of BaseChatModel");
    await expect(resolveClass("langchain_openai:OpenAIEmbeddings", BaseChatModel)).rejects.toThrow("is not a subclass of BaseChatModel");
  });
});
