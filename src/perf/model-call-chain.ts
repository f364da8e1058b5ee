// One langchain wrapModelCall layer (two, see below) for a run of the gateway's own middlewares instead of one each.
// A fenced speed patch (src/perf/patches.ts: pinned to langchain 1.5.14, whose per-layer rules it re-implements):
// createDeerflowAgent fuses only where the server switched it on.
//
// langchain 1.5's AgentNode composes `wrapModelCall` hooks one layer per middleware, and every layer, on every
// model call, re-parses the middleware's state schema, builds a runtime and request copy, rebuilds a Map of the
// agent's tools to validate the request, and keeps two async frames suspended for the whole call. The lead agent
// has about eleven such middlewares: 22 suspended frames and their promises per model call in flight (removing six
// of them saved 3.7 KB of heap per layer per idle stream). Here a run of consecutive DeerflowMiddleware wrappers is composed by one layer pair
// that applies the same per-layer rules (system prompt/message normalization, tool validation, AIMessage/Command
// tracking, MiddlewareError wrapping), chaining the members with plain promise reactions.
import { AIMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { Runnable } from "@langchain/core/runnables";
import { Command, getCurrentTaskInput, isCommand, StateSchema } from "@langchain/langgraph";
import { MiddlewareError, type AgentMiddleware } from "langchain";
import { DeerflowMiddleware } from "../agents/middlewares/base.js";

/** The fields of a model request the chain reads or rewrites (langchain's ModelRequest). */
interface Request {
  systemPrompt?: string;
  systemMessage: SystemMessage;
  messages: BaseMessage[];
  tools?: unknown[];
  state?: unknown;
  runtime?: unknown;
  [key: PropertyKey]: unknown;
}
type Handler = (request: Request) => unknown;
type Wrapper = (request: Request, handler: Handler) => unknown;

/** What the inner layer leaves for the outer one of the same call (carried on the request under this key). */
const CALL = Symbol("deerflow.modelCallChain");
interface CallRecord {
  /** Set when the members' Commands went to langchain merged: what the outer layer answers instead. */
  answer?: unknown;
}
/**
 * The last AIMessage of one model call of one agent node, across the passes an outer middleware's retries make
 * (langchain keeps one such variable per call), keyed by the node's `configurable`. An AIMessage returned by a
 * foreign middleware outside the pair is not seen here (langchain's variable is private to its AgentNode).
 */
const lastAiOfCall = new WeakMap<object, { message: AIMessage | null }>();

/** Whether `m` can join a fused run: one of ours, wrapping the model call, with no context schema of its own. */
function isFusible(m: AgentMiddleware): boolean {
  const record = m as unknown as { wrapModelCall?: unknown; contextSchema?: unknown; stateSchema?: unknown };
  return m instanceof DeerflowMiddleware && typeof record.wrapModelCall === "function" && record.contextSchema === undefined
    && (record.stateSchema === undefined || StateSchema.isInstance(record.stateSchema));
}

/** langchain's `isInternalModelResponse`: what a wrapModelCall hook may return. */
function isModelResponse(value: unknown): boolean {
  return AIMessage.isInstance(value) || isCommand(value)
    || (typeof value === "object" && value !== null && "structuredResponse" in value && "messages" in value);
}

/**
 * One Command doing what `commands` do in order: their updates as one ordered list of writes (a node's list of
 * Commands writes them in the same order), their gotos concatenated, and the first `graph` / `resume` (the gateway's
 * middlewares return updates only; RunStartMiddleware passes on those of a Command it wraps).
 */
function mergeCommands(commands: Command[]): Command {
  if (commands.length === 1) return commands[0];
  // An empty list becomes a Command without writes (see the inner layer's use).
  const update: [string, unknown][] = [];
  const goto: unknown[] = [];
  let graph: string | undefined;
  let resume: unknown;
  for (const command of commands) {
    const u = command.update as unknown;
    if (Array.isArray(u)) update.push(...(u as [string, unknown][]));
    else if (u && typeof u === "object") update.push(...Object.entries(u as Record<string, unknown>));
    if (command.goto !== undefined) goto.push(...(Array.isArray(command.goto) ? command.goto : [command.goto]));
    graph ??= command.graph;
    resume ??= command.resume;
  }
  return new Command({ update, ...(goto.length ? { goto: goto as never } : {}), ...(graph !== undefined ? { graph } : {}), ...(resume !== undefined ? { resume } : {}) });
}

/**
 * Checks a member's request like langchain's per-layer validation, against the agent's registered tools: a tool
 * added by a wrapModelCall hook needs a wrapToolCall middleware to run it, and a registered tool may not be
 * replaced by another instance of the same name.
 */
function validateTools(tools: unknown[], byName: ReadonlyMap<string, unknown>, member: string, hasWrapToolCall: boolean): void {
  const added: string[] = [];
  const replaced: string[] = [];
  for (const t of tools) {
    if (!Runnable.isRunnable(t)) continue;
    const name = (t as { name: string }).name;
    const original = byName.get(name);
    if (original === undefined) added.push(name);
    else if (original !== t) replaced.push(name);
  }
  if (added.length && !hasWrapToolCall) {
    throw new Error(`You have added a new tool in "wrapModelCall" hook of middleware "${member}": ${added.join(", ")}. This is not supported unless a middleware provides a "wrapToolCall" handler to execute it.`);
  }
  if (replaced.length) throw new Error(`You have modified a tool in "wrapModelCall" hook of middleware "${member}": ${replaced.join(", ")}. This is not supported.`);
}

/**
 * The agent node's state for this model call: the node's input as LangGraph handed it (langchain gives each layer
 * `{...its schema's keys parsed from that state, messages}`; members read their own keys and never write through
 * it, so they get the state itself and no per-call parse). Falls back to the request's state outside a graph node.
 */
function graphState(request: Request): unknown {
  const configurable = (request.runtime as { configurable?: Record<string, unknown> } | undefined)?.configurable;
  if (!configurable) return request.state;
  try {
    const input = getCurrentTaskInput({ configurable });
    return input !== null && typeof input === "object" ? input : request.state;
  } catch {
    return request.state;
  }
}

/**
 * The layer pair for `members` (outermost first). The inner layer runs the members; when they returned Commands it
 * hands langchain one Command with all their writes, and the outer layer then answers with the last AIMessage the
 * members produced, so the agent node writes `[that message, ...their Commands]` exactly as with a layer each.
 */
function fusedLayers(members: AgentMiddleware[], name: string, registered: ReadonlyMap<string, unknown>, hasWrapToolCall: boolean): AgentMiddleware[] {
  const wrappers = members.map((m) => (m.wrapModelCall as unknown as Wrapper).bind(m));
  const names = members.map((m) => m.name);
  // What each member's failure becomes (langchain wraps it in the member's name); made once, not per call.
  const rethrowAs = names.map((member) => (error: unknown): never => {
    throw MiddlewareError.wrap(error, member);
  });

  const inner = {
    name: `${name}.members`,
    wrapModelCall(request: Request, handler: Handler): Promise<unknown> {
      const record = request[CALL] as CallRecord | undefined;
      const { runtime } = request;
      const state = graphState(request);
      const entryMessage = request.systemMessage;
      let current = entryMessage;
      // `.text` re-derives the text from the content blocks on every read (three block translators): each message's
      // text is read once here instead of once per member.
      let currentText = entryMessage.text;
      // langchain's `lastAiMessage`: shared by the passes of one model call (an outer middleware may retry).
      const configurable = (runtime as { configurable?: object } | undefined)?.configurable;
      let shared = configurable ? lastAiOfCall.get(configurable) : undefined;
      if (!shared) {
        shared = { message: null };
        if (configurable) lastAiOfCall.set(configurable, shared);
      }
      const last = shared;
      const collected: Command[] = [];

      // What a member's handler answers for the layer below it: a Command is collected (once) and the member sees
      // the last AIMessage instead, as langchain's per-layer handler does.
      const answer = (result: unknown): unknown => {
        if (isCommand(result) && last.message) {
          if (!collected.includes(result)) collected.push(result);
          return last.message;
        }
        return result;
      };
      // The innermost member's handler: langchain's, given only the system message when it changed (langchain
      // compares with the message this layer was entered with, and refuses a request changing both).
      const base = (req: Request): Promise<unknown> => {
        const out = req.systemMessage === entryMessage ? req : { ...req, systemPrompt: request.systemPrompt };
        return Promise.resolve(handler(out)).then((result) => {
          if (AIMessage.isInstance(result)) last.message = result;
          return answer(result);
        });
      };
      // Runs member `i` and everything inside it. One promise reaction per member: the members are chained without
      // async frames of their own.
      const call = (i: number, req: Request): Promise<unknown> => {
        if (i === wrappers.length) return base(req);
        const member = names[i];
        const baseline = current;
        const baselineText = currentText;
        const next: Handler = (r) => {
          try {
            current = baseline;
            currentText = baselineText;
            validateTools(r.tools ?? [], registered, member, hasWrapToolCall);
            let normalized = r;
            const promptChanged = r.systemPrompt !== currentText;
            const messageChanged = r.systemMessage !== current;
            if (promptChanged && messageChanged) throw new Error("Cannot change both systemPrompt and systemMessage in the same request.");
            if (promptChanged) {
              current = new SystemMessage({ content: [{ type: "text", text: r.systemPrompt ?? "" }] });
              currentText = current.text;
              normalized = { ...r, systemPrompt: currentText, systemMessage: current };
            }
            if (messageChanged) {
              current = new SystemMessage({ ...r.systemMessage });
              currentText = current.text;
              normalized = { ...r, systemPrompt: currentText, systemMessage: current };
            }
            return call(i + 1, normalized);
          } catch (error) {
            return Promise.reject(error);
          }
        };
        let pending: unknown;
        try {
          // langchain hands each layer a copy carrying its state and runtime; a request that already carries
          // this call's (a member passed its own on, or a copy of it) is handed on as it is: ours never write to it.
          pending = wrappers[i](req.state === state && req.runtime === runtime ? req : { ...req, state, runtime }, next);
        } catch (error) {
          return Promise.reject(MiddlewareError.wrap(error, member));
        }
        return Promise.resolve(pending).then(
          (result) => {
            // As in langchain, an invalid response is reported as the member's error.
            if (!isModelResponse(result)) {
              throw MiddlewareError.wrap(new Error(`Invalid response from "wrapModelCall" in middleware "${member}": expected AIMessage or Command, got ${typeof result}`), member);
            }
            if (AIMessage.isInstance(result)) last.message = result;
            else if (isCommand(result)) collected.push(result);
            // The outermost member's answer goes back to langchain as it is; an inner one to its caller's handler.
            return i === 0 ? result : answer(result);
          },
          rethrowAs[i],
        );
      };
      return call(0, request).then((result) => {
        // No member returned a Command: langchain gets what the outermost member returned, as it would.
        if (!collected.length || !record) return result;
        // With an AIMessage, the Commands go to langchain as one and the outer layer answers with the message.
        if (last.message) {
          record.answer = last.message;
          return mergeCommands(collected);
        }
        // Without one, langchain records every Command a layer returns: the outermost member's Command is left for
        // the outer layer to return, so each of the members' Commands is recorded exactly as often as before.
        const outermost = isCommand(result) && collected[collected.length - 1] === result;
        record.answer = result;
        return mergeCommands(outermost ? collected.slice(0, -1) : collected);
      });
    },
  };

  const outer = {
    name,
    wrapModelCall(request: Request, handler: Handler): Promise<unknown> {
      const record: CallRecord = {};
      return Promise.resolve(handler({ ...request, [CALL]: record })).then((result) => ("answer" in record ? record.answer : result));
    },
  };
  return [outer as unknown as AgentMiddleware, inner as unknown as AgentMiddleware];
}

/**
 * The middleware list to build the agent from: every run of two or more consecutive model-call wrappers (in
 * wrapping order) that are DeerflowMiddleware instances without a context schema is replaced by a layer pair named
 * `DeerflowModelCallChain` (`#2`, ... for later runs) placed where the run's first wrapper was; the members stay in
 * the list, seen through views without `wrapModelCall`, so their other hooks, tools and state keep their places.
 * Each member still gets the request langchain would give it, except that `request.state` is the agent node's
 * whole state rather than a parsed copy of the member's keys (ours read only their own and never write through it). A list with no such run is returned as is.
 * @param middleware The chain in order. @param tools The agent's tools (what langchain validates requests against,
 * with the middlewares' own). @returns A new list, or `middleware` itself when nothing is fused.
 */
export function fuseModelCallWrappers(middleware: AgentMiddleware[], tools: readonly unknown[] = []): AgentMiddleware[] {
  const runs: AgentMiddleware[][] = [];
  let run: AgentMiddleware[] = [];
  for (const m of middleware) {
    if (typeof (m as { wrapModelCall?: unknown }).wrapModelCall !== "function") continue;
    if (isFusible(m)) run.push(m);
    else {
      if (run.length >= 2) runs.push(run);
      run = [];
    }
  }
  if (run.length >= 2) runs.push(run);
  if (!runs.length) return middleware;
  const hasWrapToolCall = middleware.some((m) => (m as { wrapToolCall?: unknown }).wrapToolCall != null);
  // The agent's registered tools as langchain lists them (the agent's, then the middlewares'), client tools by name.
  const registered = new Map<string, unknown>();
  for (const t of [...tools, ...middleware.flatMap((m) => ((m as { tools?: unknown[] }).tools ?? []))]) {
    if (Runnable.isRunnable(t)) registered.set((t as { name: string }).name, t);
  }
  const firstOf = new Map<AgentMiddleware, AgentMiddleware[]>();
  const member = new Set<AgentMiddleware>();
  runs.forEach((r, i) => {
    firstOf.set(r[0], fusedLayers(r, i === 0 ? "DeerflowModelCallChain" : `DeerflowModelCallChain#${i + 1}`, registered, hasWrapToolCall));
    for (const m of r) member.add(m);
  });
  const out: AgentMiddleware[] = [];
  for (const m of middleware) {
    const layers = firstOf.get(m);
    if (layers) out.push(...layers);
    out.push(member.has(m) ? (Object.create(m, { wrapModelCall: { value: undefined, enumerable: true } }) as AgentMiddleware) : m);
  }
  return out;
}
