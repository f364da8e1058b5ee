// Port of DeerFlow agents/middlewares/system_message_coalescing_middleware.py (SystemMessageCoalescingMiddleware).
import { SystemMessage, type BaseMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { DeerflowMiddleware } from "./base.js";
import { textOf } from "./message-utils.js";

/**
 * Merges system messages into the one leading system message of a model request, because providers reject or
 * misread system messages in the middle of the conversation (DynamicContextMiddleware's date reminder is one).
 * A request whose message list holds no SystemMessage passes through untouched (prefix-cache friendly).
 * Otherwise the request's system message (when non-empty) and every in-list SystemMessage, in order, become one:
 * content joined by a blank line (list content flattened to text), the id of the first part, `additional_kwargs`
 * merged (later wins); when several dynamic-context reminders are present only the last survives. The other
 * messages keep their order. Request-only: state is untouched. Hook: wrapModelCall.
 */
export class SystemMessageCoalescingMiddleware extends DeerflowMiddleware {
  readonly name = "SystemMessageCoalescingMiddleware";

  /** The merged system message and the remaining messages, or null when there is nothing to merge. */
  coalesce(system: SystemMessage | undefined, messages: readonly BaseMessage[]): { system: SystemMessage; messages: BaseMessage[] } | null {
    const inList = messages.filter((m): m is SystemMessage => SystemMessage.isInstance(m));
    if (!inList.length) return null;
    const reminders = inList.filter((m) => m.additional_kwargs?.dynamic_context_reminder);
    const lastReminder = reminders.at(-1);
    const parts = [...(system && textOf(system).trim() ? [system] : []), ...inList.filter((m) => !m.additional_kwargs?.dynamic_context_reminder || m === lastReminder)];
    const kwargs = Object.assign({}, ...parts.map((p) => p.additional_kwargs ?? {})) as Record<string, unknown>;
    const merged = new SystemMessage({
      content: parts.map((p) => textOf(p)).filter((t) => t.length > 0).join("\n\n"),
      id: parts[0]?.id,
      additional_kwargs: kwargs,
    });
    return { system: merged, messages: messages.filter((m) => !SystemMessage.isInstance(m)) };
  }

  wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const merged = this.coalesce(request.systemMessage, request.messages);
    if (!merged) return handler(request) as never;
    return handler({ ...request, systemMessage: merged.system, messages: merged.messages }) as never;
  }
}
