import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelRequest } from "langchain";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { Next } from "../../../src/agents/features.js";
import { DeerflowMiddleware } from "../../../src/agents/middlewares/base.js";
import { ThreadDataMiddleware } from "../../../src/agents/middlewares/thread-data.js";
import { formatSize, UploadsMiddleware } from "../../../src/agents/middlewares/uploads.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

let base: string;
let uploads: string;
beforeEach(() => {
  base = mkdtempSync(path.join(tmpdir(), "uploads-"));
  uploads = path.join(base, "users", "default", "threads", "t-up", "user-data", "uploads");
  mkdirSync(uploads, { recursive: true });
  writeFileSync(path.join(uploads, "report.pdf"), "pdf");
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

type Update = { messages?: HumanMessage[]; uploaded_files: { filename: string; size?: number; path?: string }[] };
const runtime = () => ({ context: { thread_id: "t-up" } });
const withFiles = (files: unknown[], content: HumanMessage["content"] = "please analyse") => new HumanMessage({ id: "m1", content, additional_kwargs: { files } });

describe("UploadsMiddleware run-start update (agent-factory.md §6.2, AF-053)", () => {
  it("prepends a <current_uploads> block to string content, same id, and records uploaded_files", () => {
    const mw = new UploadsMiddleware({ baseDir: base });
    const update = mw.runStartUpdate({ messages: [withFiles([{ filename: "report.pdf", size: 3, path: "/x", status: "uploaded" }])] }, runtime()) as Update;
    const msg = update.messages![0];
    expect(msg.id).toBe("m1");
    expect(typeof msg.content).toBe("string");
    expect(msg.content).toContain("<current_uploads>");
    expect(msg.content).toContain("report.pdf");
    expect(msg.content).toContain("/mnt/user-data/uploads/report.pdf");
    expect(String(msg.content).endsWith("\n\nplease analyse")).toBe(true);
    expect(msg.additional_kwargs.original_user_content).toBe("please analyse");
    expect(update.uploaded_files[0].filename).toBe("report.pdf");
    expect(update.uploaded_files[0].path).toBe("/mnt/user-data/uploads/report.pdf");
  });

  it("clears uploaded_files when there are no files, all are missing on disk, or the last message is not human (AF-053b-d)", () => {
    const mw = new UploadsMiddleware({ baseDir: base });
    expect(mw.runStartUpdate({ messages: [new HumanMessage("no files")] }, runtime())).toEqual({ uploaded_files: [] });
    expect(mw.runStartUpdate({ messages: [withFiles([{ filename: "ghost.pdf", size: 1 }])] }, runtime())).toEqual({ uploaded_files: [] });
    expect(mw.runStartUpdate({ messages: [withFiles([{ filename: "report.pdf" }]), new AIMessage("hi")] }, runtime())).toEqual({ uploaded_files: [] });
    expect(mw.runStartUpdate({ messages: [] }, runtime())).toEqual({ uploaded_files: [] });
  });

  it("rejects names with directories and staging files, and never takes the uploads directory from state", () => {
    const mw = new UploadsMiddleware({ baseDir: base });
    writeFileSync(path.join(uploads, ".upload-abc"), "x");
    // A client-written thread_data pointing elsewhere is ignored: the directory is recomputed from the run's ids.
    const thread_data = { workspace_path: "/w", uploads_path: "/etc", outputs_path: "/o" };
    const update = mw.runStartUpdate(
      { messages: [withFiles([{ filename: "../etc/passwd" }, { filename: "a/report.pdf" }, { filename: ".upload-abc" }, { filename: "report.pdf", size: 2048 }])], thread_data } as { messages: BaseMessage[] },
      runtime(),
    ) as Update;
    expect(update.uploaded_files.map((f) => f.filename)).toEqual(["report.pdf"]);
    expect(String(update.messages![0].content)).toContain("(2.0 KB)");
  });

  it("adds a leading text block to list content and summarizes files beyond the cap", () => {
    for (const n of ["a.csv", "b.csv", "c.png"]) writeFileSync(path.join(uploads, n), "x");
    const mw = new UploadsMiddleware({ baseDir: base, maxFilesPerContextSection: 1 });
    const files = ["report.pdf", "a.csv", "b.csv", "c.png"].map((filename) => ({ filename, size: 10 }));
    const update = mw.runStartUpdate({ messages: [withFiles(files, [{ type: "text", text: "look" }])] }, runtime()) as Update;
    const content = update.messages![0].content as { type: string; text: string }[];
    expect(content[0].text).toContain("<current_uploads>");
    expect(content[0].text).toContain("...and 3 more file(s): 2 .csv, 1 .png");
    expect(content[1].text).toBe("look");
    expect(update.uploaded_files).toHaveLength(4);
  });

  it("neutralizes tags in file names and rejects a cap below 1", () => {
    writeFileSync(path.join(uploads, "<b>.txt"), "x");
    const update = new UploadsMiddleware({ baseDir: base }).runStartUpdate({ messages: [withFiles([{ filename: "<b>.txt" }])] }, runtime()) as Update;
    expect(String(update.messages![0].content)).toContain("&lt;b&gt;.txt");
    expect(() => new UploadsMiddleware({ maxFilesPerContextSection: 0 })).toThrow("must be >= 1");
  });

  it("formats sizes in KB below 1 MiB and MB above", () => {
    expect(formatSize(3)).toBe("0.0 KB");
    expect(formatSize(1536)).toBe("1.5 KB");
    expect(formatSize(5 * 1024 * 1024)).toBe("5.0 MB");
  });
});

describe("UploadsMiddleware inside an agent", () => {
  it.each([
    ["declaring its channel", true],
    ["on ThreadState's channel (declareState: false, as the lead agent builds it)", false],
  ])("shows the model the uploads block, persists the rewritten message and clears uploaded_files on the next run, %s", async (_label, declareState) => {
    const model = new FakeChatModel(["I see the report", "plain answer"]);
    const uploads = new UploadsMiddleware({ baseDir: base, declareState });
    expect(uploads.stateSchema === undefined).toBe(!declareState);
    const agent = createDeerflowAgent(model, null, {
      features: { sandbox: new ThreadDataMiddleware({ baseDir: base }) },
      extraMiddleware: [uploads],
      checkpointer: new MemorySaver(),
    });
    const config = { configurable: { thread_id: "t-up" }, context: { thread_id: "t-up" } };
    const out = (await agent.invoke({ messages: [withFiles([{ filename: "report.pdf", size: 3 }])] } as never, config as never)) as unknown as {
      messages: BaseMessage[]; uploaded_files: unknown[];
    };
    expect(String(model.calls[0].at(-1)!.content)).toContain("<current_uploads>");
    expect(String(out.messages[0].content)).toContain("report.pdf");
    expect(out.messages[0].id).toBe("m1");
    // ThreadData (further out in the chain) and Uploads both rewrite the same message: both rewrites are kept.
    expect(out.messages[0].name).toBe("user-input");
    expect(out.messages[0].additional_kwargs).toMatchObject({ uploads_injected: true, original_user_content: "please analyse" });
    expect(typeof out.messages[0].additional_kwargs.timestamp).toBe("string");
    expect(model.calls[0].at(-1)!.name).toBe("user-input");
    expect(out.messages.map((m) => m.getType())).toEqual(["human", "ai"]);
    expect(out.uploaded_files).toHaveLength(1);
    const next = (await agent.invoke({ messages: [new HumanMessage("thanks")] } as never, config as never)) as unknown as { uploaded_files: unknown[] };
    expect(next.uploaded_files).toEqual([]);
  });
});

describe("run-start writes of ThreadData and Uploads (RunStartMiddleware)", () => {
  it("keeps both rewrites when a middleware between them passes the model a request it rebuilt field by field", async () => {
    // A user middleware anchored right after ThreadData that builds a fresh request object (no spread): the
    // pending run-start update must still reach Uploads, or the later write of ThreadData drops the uploads block.
    class Rebuild extends DeerflowMiddleware {
      readonly name = "Rebuild";
      wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
        const { model, messages, tools, systemMessage, systemPrompt, state, runtime, toolChoice, responseFormat, modelSettings } = request;
        return handler({ model, messages, tools, systemMessage, systemPrompt, state, runtime, toolChoice, responseFormat, modelSettings } as ModelRequest) as never;
      }
    }
    Next(ThreadDataMiddleware)(Rebuild);
    const model = new FakeChatModel(["I see the report"]);
    const agent = createDeerflowAgent(model, null, {
      features: { sandbox: new ThreadDataMiddleware({ baseDir: base }) },
      extraMiddleware: [new Rebuild(), new UploadsMiddleware({ baseDir: base })],
      checkpointer: new MemorySaver(),
    });
    const config = { configurable: { thread_id: "t-up" }, context: { thread_id: "t-up", run_id: "r1" } };
    const out = (await agent.invoke({ messages: [withFiles([{ filename: "report.pdf", size: 3 }])] } as never, config as never)) as unknown as {
      messages: BaseMessage[]; uploaded_files: unknown[];
    };
    const sent = model.calls[0].at(-1)!;
    expect(String(sent.content)).toContain("<current_uploads>");
    expect(sent.name).toBe("user-input");
    expect(String(out.messages[0].content)).toContain("<current_uploads>");
    expect(out.messages[0].name).toBe("user-input");
    expect(out.messages[0].additional_kwargs).toMatchObject({ run_id: "r1", uploads_injected: true, original_user_content: "please analyse" });
    expect(out.messages.map((m) => m.getType())).toEqual(["human", "ai"]);
    expect(out.uploaded_files).toHaveLength(1);
  });
});
