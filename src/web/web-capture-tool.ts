// `web_capture(url)`: a screenshot of a rendered page saved into the thread's outputs and shown as an artifact
// (DeerFlow community/browserless web_capture_tool). The capture provider comes from the catalog like the other
// tools'; the file is written beneath the thread's outputs directory with the sandbox's symlink-safe helpers.
import { ToolMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import { tool } from "langchain";
import { z } from "zod";
import { createExclusiveBeneath, withHandle } from "../sandbox/safe-fs.js";
import { hostSandbox, type ToolRuntimeConfig } from "../tools/sandbox/runtime.js";
import { toolCallIdOf } from "../tools/builtins/write-todos.js";
import { runWebCall } from "./run-web-call.js";
import { assertPublicUrl } from "./ssrf-guard.js";
import type { CaptureProvider } from "./types.js";
import { WebToolError } from "./web-error.js";

const OUTPUTS = "/mnt/user-data/outputs";
const EXTENSIONS: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };
const CAPTURED = "Captured screenshot: ";

/** A file name for a capture of `url`: `capture-<host>-<time>.<ext>`, safe characters only. */
export function captureFileName(url: string, ext: string, now = new Date()): string {
  const host = new URL(url).hostname.replace(/[^a-zA-Z0-9.-]/g, "_").slice(0, 60) || "page";
  return `capture-${host}-${now.toISOString().replace(/[:.]/g, "-")}.${ext}`;
}

/** Writes the image as a new file in the thread's outputs; returns its virtual path. */
async function saveCapture(config: unknown, url: string, bytes: Buffer, mimeType: string): Promise<string> {
  const ext = EXTENSIONS[mimeType];
  if (!ext) throw new WebToolError("bad_response", `the capture service returned ${mimeType || "an unknown type"}, not a PNG, JPEG or WebP image`);
  // The gateway's copy of the thread's files (binary content has no path through the Sandbox interface's text writes).
  const sandbox = await hostSandbox(config as ToolRuntimeConfig).catch(() => {
    throw new WebToolError("invalid_input", "this run has no thread, so there is no outputs folder to save the capture in");
  });
  const dir = await sandbox.openDir(OUTPUTS, "write", true);
  return withHandle(dir, async (handle) => {
    for (let i = 0; i < 5; i++) {
      const name = captureFileName(url, ext, new Date(Date.now() + i));
      if (await createExclusiveBeneath(handle, name, bytes)) return `${OUTPUTS}/${name}`;
    }
    throw new WebToolError("bad_response", "could not pick a free file name in the outputs folder");
  });
}

/**
 * `web_capture(url)`: checks the URL (SSRF guard), asks the capture provider for a screenshot, saves it under
 * `/mnt/user-data/outputs/` and answers `Captured screenshot: <virtual path>` with the path added to the thread's
 * `artifacts`; failures are `Error: <provider>: <reason>` results. Never cached (each capture is a new file).
 */
export const webCaptureTool = tool(
  async ({ url }, config) => {
    const text = await runWebCall<{ tool: "web_capture"; provider: CaptureProvider }>({
      tool: "web_capture",
      config,
      args: { url },
      cacheable: false,
      execute: async (provider, ctx) => {
        const checked = await assertPublicUrl(url, { allowPrivateAddresses: ctx.entry.allow_private_addresses === true });
        const image = await provider.capture(checked.href, ctx);
        return CAPTURED + (await saveCapture(config, checked.href, image.bytes, image.mimeType));
      },
    });
    const id = toolCallIdOf(config);
    if (!text.startsWith(CAPTURED)) return new ToolMessage({ content: text, tool_call_id: id, name: "web_capture", status: "error" });
    return new Command({ update: { artifacts: [text.slice(CAPTURED.length)], messages: [new ToolMessage({ content: text, tool_call_id: id, name: "web_capture" })] } });
  },
  {
    name: "web_capture",
    description: [
      "Capture a rendered webpage screenshot and present it as an artifact.",
      "Use this tool when you need a visual capture of a public webpage, especially JavaScript-heavy pages, UI states, dashboards, or visual evidence for a report.",
      "Only capture exact URLs provided by the user or discovered through other tools.",
      "URLs must include the schema: https://example.com is valid while example.com is invalid.",
    ].join("\n"),
    schema: z.object({ url: z.string().describe("The http(s) URL to capture.") }),
  },
);
