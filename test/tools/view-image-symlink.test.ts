import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { inspectImage } from "../../src/tools/builtins/view-image.js";

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
const root = mkdtempSync(path.join(tmpdir(), "dfgw-vi-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("view_image and symlinks", () => {
  it("refuses an image reached through a symlink that points outside the thread's directories", () => {
    const dirs = { workspace_path: path.join(root, "t/workspace"), uploads_path: path.join(root, "t/uploads"), outputs_path: path.join(root, "t/outputs") };
    for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
    writeFileSync(path.join(root, "secret.png"), PNG);
    symlinkSync(path.join(root, "secret.png"), path.join(dirs.uploads_path, "leak.png"));
    expect(inspectImage("/mnt/user-data/uploads/leak.png", dirs)).toEqual({ error: "Error: Image path leaves the thread's directories (symlinks are not followed): /mnt/user-data/uploads/leak.png" });
    // A directory on the way that is a symlink (what sandboxed code swaps in mid-check) is refused too, and so is
    // the area directory itself.
    mkdirSync(path.join(root, "elsewhere"), { recursive: true });
    writeFileSync(path.join(root, "elsewhere", "x.png"), PNG);
    symlinkSync(path.join(root, "elsewhere"), path.join(dirs.uploads_path, "sub"));
    expect(inspectImage("/mnt/user-data/uploads/sub/x.png", dirs, { read: true })).toEqual({ error: "Error: Image path leaves the thread's directories (symlinks are not followed): /mnt/user-data/uploads/sub/x.png" });
    symlinkSync(path.join(root, "elsewhere"), path.join(root, "t/outputs-link"));
    expect(inspectImage("/mnt/user-data/outputs/x.png", { ...dirs, outputs_path: path.join(root, "t/outputs-link") })).toMatchObject({ error: expect.stringContaining("symlinks are not followed") });
    writeFileSync(path.join(dirs.uploads_path, "ok.png"), PNG);
    expect(inspectImage("/mnt/user-data/uploads/ok.png", dirs, { read: true })).toEqual({ mime_type: "image/png", size: PNG.length, data: PNG });
    expect(inspectImage("/mnt/user-data/uploads/ok.png", dirs)).toMatchObject({ mime_type: "image/png", size: PNG.length });
  });
});
