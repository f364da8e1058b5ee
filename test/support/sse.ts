// Parses raw SSE bytes the way the LangGraph SDK does, for assertions on exact frames.

/** One parsed frame: `id` only when the frame carried one. `data` is the parsed JSON. */
export interface SseFrame {
  event: string;
  data: any;
  id?: string;
}

/** Splits an SSE body into frames; comment lines (`: heartbeat`) are counted separately. */
export function parseSse(text: string): { frames: SseFrame[]; comments: string[] } {
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (!block.trim()) continue;
    let event = "message";
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) comments.push(line);
      else if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      else if (line.startsWith("id:")) id = line.slice(3).trim();
    }
    if (!data.length && event === "message") continue;
    frames.push({ event, data: data.length ? JSON.parse(data.join("\n")) : null, ...(id !== undefined ? { id } : {}) });
  }
  return { frames, comments };
}

/**
 * Reads SSE frames from a streaming response as they arrive, until `stop(frames)` is true or the stream ends
 * (then `ended` is true); `abort()` closes the connection. Frames are parsed as in {@link parseSse}.
 */
export async function readFramesUntil(res: Response, stop: (frames: SseFrame[]) => boolean): Promise<{ frames: SseFrame[]; ended: boolean; cancel(): Promise<void> }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const frames: SseFrame[] = [];
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch {
      return { frames, ended: true, cancel: async () => {} };
    }
    if (chunk.done) return { frames, ended: true, cancel: async () => {} };
    buffer += decoder.decode(chunk.value, { stream: true });
    const cut = buffer.lastIndexOf("\n\n");
    if (cut === -1) continue;
    frames.push(...parseSse(buffer.slice(0, cut + 2)).frames);
    buffer = buffer.slice(cut + 2);
    if (stop(frames)) return { frames, ended: false, cancel: () => reader.cancel().catch(() => undefined) };
  }
}
