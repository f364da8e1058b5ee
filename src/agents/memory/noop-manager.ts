// Port of DeerFlow agents/memory/backends/noop: a backend that stores and injects nothing.
import type { MemoryManager } from "./manager.js";
import { emptyMemory, type MemoryDocument } from "./memory-document.js";

/**
 * `manager_class: noop`: every turn is ignored, nothing is injected, every read is the empty document, and clearing
 * succeeds. Fact edits, import and search are unsupported (the routes answer 501), so `mode: tool` is refused with
 * it. Useful to switch memory off without touching `enabled`, and as the smallest example of a backend.
 */
export class NoopMemoryManager implements MemoryManager {
  readonly name = "noop";
  readonly supportsSearch = false;

  add(): void {}

  async getContext(): Promise<string> {
    return "";
  }

  async flush(): Promise<void> {}

  async shutdownFlush(): Promise<boolean> {
    return true;
  }

  async forget(): Promise<void> {}

  async getMemory(): Promise<MemoryDocument> {
    return emptyMemory();
  }

  async reloadMemory(): Promise<MemoryDocument> {
    return emptyMemory();
  }

  async clearMemory(): Promise<MemoryDocument> {
    return emptyMemory();
  }
}
