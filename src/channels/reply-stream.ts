// Streams a run's answer into the chat (upstream manager's streaming path + telegram's edit throttle): the first
// text posts a message, later text edits it at most once per `minEditIntervalMs` (the platform's limit), the end
// writes the final text once more. A text longer than one message continues in new messages (no edits where the
// platform has none: the whole answer is sent in chunks at the end).
import type { StreamBridge } from "../runtime/stream/stream-bridge.js";
import type { ChannelAdapter, ReplyTarget } from "./types.js";

/** What the streamer reports back: its platform message ids and when the first reply went out. */
export interface StreamedReply {
  /** ms since epoch of the first message posted for the run, or null when none was. */
  firstReplyAt: number | null;
  /** The messages posted (ids), in order. */
  messageIds: string[];
}

/** Splits text into pieces of at most `max` characters (code points), preferring line breaks. */
export function splitText(text: string, max: number): string[] {
  const chars = Array.from(text);
  if (chars.length <= max) return [text];
  const parts: string[] = [];
  let start = 0;
  while (start < chars.length) {
    let end = Math.min(chars.length, start + max);
    if (end < chars.length) {
      const newline = chars.lastIndexOf("\n", end - 1);
      if (newline > start + max / 2) end = newline + 1;
    }
    parts.push(chars.slice(start, end).join(""));
    start = end;
  }
  return parts;
}

/** The text of an AI message chunk of a `messages` event (`[chunk, metadata]`), or null for anything else. */
export function aiTextOf(json: string): { id: string; text: string } | null {
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch {
    return null;
  }
  const chunk = Array.isArray(data) ? (data[0] as Record<string, unknown> | undefined) : undefined;
  if (!chunk || !/ai/i.test(String(chunk.type ?? ""))) return null;
  const content = chunk.content;
  const text = typeof content === "string" ? content : Array.isArray(content) ? content.map((p) => (typeof p === "object" && p && (p as { type?: string }).type === "text" ? String((p as { text?: unknown }).text ?? "") : "")).join("") : "";
  return { id: String(chunk.id ?? ""), text };
}

/**
 * Follows a run on the bridge and mirrors its answer into the chat. `finalText` is read once the run has ended
 * (the stored answer, or an error / stop notice) and replaces the streamed text.
 */
export class ReplyStreamer {
  private posted: string[] = [];
  private shown = "";
  private lastEditAt = 0;
  private firstReplyAt: number | null = null;
  private pendingEdit: ReturnType<typeof setTimeout> | null = null;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(private readonly adapter: ChannelAdapter, private readonly target: ReplyTarget) {}

  /** Streams the run's `messages` events until its end, then writes `finalText()`. */
  async follow(bridge: StreamBridge, runId: string, finalText: (streamed: string) => Promise<string>): Promise<StreamedReply> {
    const texts = new Map<string, string>();
    for await (const item of bridge.subscribe(runId)) {
      if (item.kind !== "event") break;
      if (item.event.event !== "messages") continue;
      const piece = aiTextOf(item.event.json);
      if (!piece || !piece.text) continue;
      texts.set(piece.id, (texts.get(piece.id) ?? "") + piece.text);
      // The newest AI message is the one being written (a tool round starts a new one).
      this.update([...texts.values()].at(-1) ?? "");
    }
    if (this.pendingEdit) clearTimeout(this.pendingEdit);
    await this.inFlight;
    await this.write(await finalText(this.latest), true);
    return { firstReplyAt: this.firstReplyAt, messageIds: this.posted };
  }

  /** Posts or (throttled) edits the streamed text; an edit due later is scheduled once. */
  private update(text: string): void {
    if (!this.adapter.capabilities.editMessages) return;
    this.latest = text;
    // One write at a time: text that arrives while one is in flight (the first post included) goes out with the
    // next throttled edit, so a slow platform answer cannot queue up an edit per token.
    if (this.pendingEdit || this.writing) return;
    const wait = this.lastEditAt + this.adapter.capabilities.minEditIntervalMs - Date.now();
    if (this.posted.length > 0 && wait > 0) {
      this.pendingEdit = setTimeout(() => {
        this.pendingEdit = null;
        this.chain(() => this.write(this.latest, false));
      }, wait);
      return;
    }
    this.chain(() => this.write(this.latest, false));
  }

  private latest = "";
  private writing = false;

  private chain(step: () => Promise<void>): void {
    this.writing = true;
    // Streaming edits are best effort: a failed one is overtaken by the next (the final write reports failures).
    this.inFlight = this.inFlight.then(step).catch(() => undefined).finally(() => { this.writing = false; });
  }

  /** Makes the chat show `text`: edits the posted messages, posts the pieces beyond them. */
  private async write(text: string, final: boolean): Promise<void> {
    const pieces = splitText(text || (final ? "(no answer)" : ""), this.adapter.capabilities.maxMessageChars);
    // While streaming, only the last piece changes; earlier ones were final when the next one began.
    const joined = pieces.join("\u0000");
    if (!final && (joined === this.shown || !text)) return;
    // A platform whose streamed messages stay open until closed gets every posted message edited once more at the end.
    const closing = final && this.adapter.capabilities.finishStreams === true;
    for (let i = 0; i < pieces.length; i++) {
      const previous = this.shown.split("\u0000")[i];
      if (i < this.posted.length) {
        if ((previous !== pieces[i] || closing) && this.adapter.capabilities.editMessages) await this.adapter.edit(this.target, this.posted[i], pieces[i], closing ? { final: true } : undefined);
      } else {
        this.posted.push(await this.adapter.send(this.target, pieces[i], final ? undefined : { streaming: true }));
        this.firstReplyAt ??= Date.now();
      }
    }
    this.shown = joined;
    this.lastEditAt = Date.now();
  }
}
