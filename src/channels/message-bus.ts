// The queue between platform adapters and the manager (DeerFlow app/channels/message_bus.py): bounded (a full
// queue refuses, so a webhook answers 503 and the platform redelivers later), handled by at most
// `max_concurrency` handlers at once, and in arrival order within one conversation (a `/stop` is handled after
// the message that started the run it stops).
import type { InboundMessage } from "./types.js";

/** Thrown by {@link MessageBus.publish} when `inbound_queue_maxsize` messages are already waiting. */
export class QueueFullError extends Error {
  constructor() {
    super("The channel inbound queue is full");
  }
}

/** A bounded, per-conversation-ordered work queue with a fixed handler concurrency. */
export class MessageBus {
  private pending = 0;
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly handler: (message: InboundMessage) => Promise<void>,
    private readonly options: { concurrency: number; maxQueued: number; onError: (err: unknown, message: InboundMessage) => void },
  ) {}

  /** Queues a message; resolves once queued (not handled). @throws QueueFullError when the queue is full. */
  async publish(message: InboundMessage): Promise<void> {
    if (this.pending >= this.options.maxQueued) throw new QueueFullError();
    this.pending++;
    const key = `${message.provider}\u0000${message.chatId}\u0000${message.topicId ?? ""}`;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.run(message));
    this.chains.set(key, next);
    void next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
  }

  private async run(message: InboundMessage): Promise<void> {
    // A finishing handler hands its slot straight to the next waiter (no window for a newcomer to overtake it).
    if (this.active >= this.options.concurrency) await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.active++;
    try {
      await this.handler(message);
    } catch (err) {
      this.options.onError(err, message);
    } finally {
      this.pending--;
      const waiter = this.waiters.shift();
      if (waiter) waiter();
      else this.active--;
    }
  }

  /** Resolves when every queued message has been handled. */
  async drain(): Promise<void> {
    while (this.chains.size) await Promise.allSettled([...this.chains.values()]);
  }
}
