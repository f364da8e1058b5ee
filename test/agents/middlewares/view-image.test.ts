import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { ThreadDataMiddleware } from "../../../src/agents/middlewares/thread-data.js";
import { threadDataPaths } from "../../../src/config/paths.js";
import { imageContextBlocks, ViewImageMiddleware } from "../../../src/agents/middlewares/view-image.js";
import { inspectImage } from "../../../src/tools/builtins/view-image.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("rest-of-png")]);
let base: string;
let dirs: ReturnType<typeof threadDataPaths>;
beforeEach(() => {
  base = mkdtempSync(path.join(tmpdir(), "view-image-"));
  dirs = threadDataPaths(base, "default", "t-img");
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(dirs.uploads_path, "chart.png"), PNG);
  writeFileSync(path.join(dirs.uploads_path, "fake.png"), "not a png");
  writeFileSync(path.join(dirs.uploads_path, "notes.txt"), "text");
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe("view_image tool (agent-factory.md §7)", () => {
  it("accepts a real image under /mnt/user-data and reports its metadata", () => {
    expect(inspectImage("/mnt/user-data/uploads/chart.png", dirs)).toEqual({ mime_type: "image/png", size: PNG.length });
  });

  it.each([
    ["/etc/passwd", "Only images under /mnt/user-data"],
    ["/mnt/user-data/uploads/../../../etc/passwd", "Only images under /mnt/user-data"],
    ["/mnt/user-data/uploads/missing.png", "Image file not found"],
    ["/mnt/user-data/uploads", "Only images under"],
    ["/mnt/user-data/uploads/notes.txt", "Unsupported image type '.txt'"],
    ["/mnt/user-data/uploads/fake.png", "does not match its .png extension"],
  ])("rejects %s", (p, message) => {
    const result = inspectImage(p, dirs) as { error: string };
    expect(result.error.startsWith("Error: ")).toBe(true);
    expect(result.error).toContain(message);
  });
});

describe("ViewImageMiddleware (agent-factory.md §6.10)", () => {
  it("builds image blocks, with a note for images that changed and a placeholder when none were viewed", () => {
    const good = { mime_type: "image/png", size: PNG.length };
    const blocks = imageContextBlocks({ "/mnt/user-data/uploads/chart.png": good, "/mnt/user-data/uploads/gone.png": good }, dirs);
    expect(blocks[0]).toEqual({ type: "text", text: "Here are the images you've viewed:" });
    expect(blocks[2]).toEqual({ type: "image_url", image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` } });
    expect(blocks[3]).toEqual({ type: "text", text: "- /mnt/user-data/uploads/gone.png: image unavailable or changed since it was viewed" });
    expect(imageContextBlocks({}, dirs)).toEqual([{ type: "text", text: "No images have been viewed." }]);
  });

  it("re-resolves every image in the thread's directories: a recorded host path or a path outside is never read", () => {
    const outside = path.join(base, "secret.png");
    writeFileSync(outside, PNG);
    const blocks = imageContextBlocks({
      "/mnt/user-data/uploads/nothing-here.png": { mime_type: "image/png", size: PNG.length, actual_path: outside },
      [outside]: { mime_type: "image/png", size: PNG.length, actual_path: outside },
      "/mnt/user-data/uploads/../../../../secret.png": { mime_type: "image/png", size: PNG.length },
    }, dirs);
    expect(JSON.stringify(blocks)).not.toContain("base64");
    expect(blocks.filter((b) => b.type === "text" && b.text.endsWith("image unavailable or changed since it was viewed"))).toHaveLength(3);
  });

  it("injects the images only after every call of the view_image message is answered, and only once", () => {
    const mw = new ViewImageMiddleware();
    const ai = new AIMessage({ id: "ai-1", content: "", tool_calls: [{ name: "view_image", args: {}, id: "v1", type: "tool_call" }, { name: "bash", args: {}, id: "b1", type: "tool_call" }] });
    const v1 = new ToolMessage({ content: "Successfully read image", tool_call_id: "v1" });
    const b1 = new ToolMessage({ content: "ok", tool_call_id: "b1" });
    expect(mw.imageContextFor([new HumanMessage("x"), ai, v1], {}, null)).toBeNull();
    const extra = mw.imageContextFor([new HumanMessage("x"), ai, v1, b1], {}, null)!;
    expect(extra.id).toBe("view-image-context:ai-1");
    expect(extra.additional_kwargs).toMatchObject({ hide_from_ui: true, deerflow_view_image_context: true });
    expect(mw.imageContextFor([new HumanMessage("x"), ai, v1, b1, extra], {}, null)).toBeNull();
    expect(mw.imageContextFor([new HumanMessage("x"), new AIMessage("no tools")], {}, null)).toBeNull();
  });

  it("lets the model see the image after view_image, and keeps base64 out of the state", async () => {
    const savedHome = process.env.DEER_FLOW_HOME;
    process.env.DEER_FLOW_HOME = base;
    try {
    const model = new FakeChatModel([{ tool_calls: [{ name: "view_image", args: { image_path: "/mnt/user-data/uploads/chart.png" } }] }, "It is a chart", "bye"]);
    const agent = createDeerflowAgent(model, null, {
      features: { sandbox: new ThreadDataMiddleware({ baseDir: base }), vision: true },
      checkpointer: new MemorySaver(),
    });
    // A custom sandbox middleware counts as "sandbox on", so view_image is injected.
    expect((agent as unknown as { options: { tools?: { name: string }[] } }).options.tools?.map((t) => t.name)).toContain("view_image");
    const config = { configurable: { thread_id: "t-img" }, context: { thread_id: "t-img" } };
    const out = (await agent.invoke({ messages: [new HumanMessage("look at the chart")] } as never, config as never)) as unknown as {
      messages: BaseMessage[]; viewed_images: Record<string, unknown>;
    };
    expect(out.viewed_images["/mnt/user-data/uploads/chart.png"]).toMatchObject({ mime_type: "image/png", size: PNG.length });
    const seen = model.calls[1].at(-1)!;
    expect(seen.additional_kwargs.deerflow_view_image_context).toBe(true);
    expect(JSON.stringify(seen.content)).toContain(`data:image/png;base64,${PNG.toString("base64")}`);
    expect(JSON.stringify(out.messages)).not.toContain(PNG.toString("base64"));
    await agent.invoke({ messages: [new HumanMessage("thanks")] } as never, config as never);
    expect(model.calls[2].some((m) => m.additional_kwargs?.deerflow_view_image_context)).toBe(false);
    expect(JSON.stringify(out.viewed_images)).not.toContain(base);
    } finally {
      if (savedHome === undefined) delete process.env.DEER_FLOW_HOME;
      else process.env.DEER_FLOW_HOME = savedHome;
    }
  });
});
