// A generator stream that ends without throwing. @langchain/core 1.4.0's `IterableReadableStream.fromAsyncGenerator`
// (behind every `Runnable.stream()`, the gateway's graph stream included) closes the stream when the generator is
// done and then enqueues the final `undefined` anyway: the enqueue throws Node's ERR_INVALID_STATE TypeError, which
// rejects the pull and is dropped because the stream is already closed. Building that error and its stack trace was
// 0.4% of the server's CPU at C=64 (the `NodeError` entry of the profile), once per run.
import { IterableReadableStream } from "@langchain/core/utils/stream";

type FromAsyncGenerator = typeof IterableReadableStream.fromAsyncGenerator;

/** The lines of the 1.4.0 implementation this replaces; an upstream fix or rewrite drops them, and nothing is patched. */
const ENQUEUE_AFTER_CLOSE = /if \(done\) controller\.close\(\);\s*controller\.enqueue\(value\);/;

let installed: { original: FromAsyncGenerator } | null = null;

/**
 * Makes `IterableReadableStream.fromAsyncGenerator` return after closing a finished stream instead of enqueueing into
 * it. Nothing observable changes: the stream's default strategy (high-water mark 1) pulls only into an empty queue,
 * so the `close()` before the failing enqueue always closes the stream at once and the original's rejected pull is
 * ignored; values, the end of the stream, errors and cancellation (`generator.return(reason)`) are as before.
 * Installs only over the implementation it was written for. Idempotent; for the server process.
 *
 * @returns Whether the patched method is in place.
 */
export function installGeneratorStreamEnd(): boolean {
  if (installed) return true;
  const original = IterableReadableStream.fromAsyncGenerator;
  if (typeof original !== "function" || !ENQUEUE_AFTER_CLOSE.test(Function.prototype.toString.call(original))) return false;
  IterableReadableStream.fromAsyncGenerator = function fromAsyncGenerator<T>(generator: AsyncGenerator<T>): IterableReadableStream<T> {
    return new IterableReadableStream<T>({
      async pull(controller) {
        const { value, done } = await generator.next();
        if (done) {
          controller.close();
          return;
        }
        controller.enqueue(value);
      },
      async cancel(reason) {
        await generator.return(reason);
      },
    });
  };
  installed = { original };
  return true;
}

/** Puts @langchain/core's own method back (tests). */
export function uninstallGeneratorStreamEnd(): void {
  if (!installed) return;
  IterableReadableStream.fromAsyncGenerator = installed.original;
  installed = null;
}
