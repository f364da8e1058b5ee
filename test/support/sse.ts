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
