// Buffered random bytes for the global `crypto.getRandomValues`. Every LangChain runnable call takes a UUIDv7 for
// its run id (langsmith's RunTree, the callback manager, LangGraph's checkpoint ids), each through
// `crypto.getRandomValues(new Uint8Array(16))`; on Node 20 each such call crosses into OpenSSL on its own (~5 µs
// measured on the 2-core bench VM), about 50 calls and 2% of the server's CPU per run. Node's own
// `crypto.randomUUID()` answers from a buffer for the same reason; this does the same for small requests.
import { randomFillSync } from "node:crypto";

/** Requests up to this many bytes are served from the buffer; larger ones go to the platform (ms-scale anyway). */
const MAX_POOLED_BYTES = 256;

/** Integer typed arrays, the only views WebCrypto `getRandomValues` accepts. */
const INTEGER_ARRAYS: ReadonlySet<unknown> = new Set([Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]);

let uninstall: (() => void) | null = null;

/**
 * Replaces `globalThis.crypto.getRandomValues` with one that copies small requests (integer typed arrays of at most
 * 256 bytes) out of a buffer of `poolBytes` refilled from `crypto.randomFillSync` (the same CSPRNG, one call per
 * refill instead of one per request); every byte is handed out once. Any other argument goes to the platform's
 * function, so its errors (`TypeMismatchError` for a float array, `QuotaExceededError` over 65,536 bytes) are
 * unchanged. Idempotent; for the server process, where the run ids are made (embedders keep the platform's).
 *
 * @param poolBytes Buffer size in bytes (default 4096; at least 256).
 * @returns A function that restores the platform's `getRandomValues`.
 */
export function installRandomPool(poolBytes = 4096): () => void {
  if (uninstall) return uninstall;
  const webcrypto = globalThis.crypto;
  const platform = webcrypto.getRandomValues;
  const hadOwn = Object.prototype.hasOwnProperty.call(webcrypto, "getRandomValues");
  const pool = Buffer.allocUnsafeSlow(Math.max(MAX_POOLED_BYTES, Math.floor(poolBytes)));
  let offset = pool.length;
  const pooled = function getRandomValues<T extends ArrayBufferView | null>(this: unknown, array: T): T {
    const view = array as ArrayBufferView | null;
    if (!view || !INTEGER_ARRAYS.has(view.constructor) || view.byteLength > MAX_POOLED_BYTES) return platform.call(webcrypto, array as never) as T;
    const size = view.byteLength;
    if (offset + size > pool.length) {
      randomFillSync(pool);
      offset = 0;
    }
    pool.copy(new Uint8Array(view.buffer, view.byteOffset, size), 0, offset, offset + size);
    // Handed-out bytes are not kept readable in the buffer.
    pool.fill(0, offset, offset + size);
    offset += size;
    return array;
  };
  Object.defineProperty(webcrypto, "getRandomValues", { value: pooled, writable: true, configurable: true, enumerable: true });
  uninstall = () => {
    // Node keeps getRandomValues on Crypto.prototype: removing the own property brings it back.
    if (hadOwn) Object.defineProperty(webcrypto, "getRandomValues", { value: platform, writable: true, configurable: true, enumerable: true });
    else delete (webcrypto as unknown as Record<string, unknown>).getRandomValues;
    uninstall = null;
  };
  return uninstall;
}
