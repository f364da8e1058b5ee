// The Feishu / Lark long connection on top of the Open Platform fake (feishu.ts): `POST /callback/ws/endpoint`
// (`{AppID, AppSecret}` -> `{code, msg, data: {URL, ClientConfig}}`; code 514 "auth failed" for wrong credentials)
// and the socket it names, on a `ws` server speaking the `pbbp2` frames lark-oapi uses: a Frame (SeqID, LogID,
// service, method 0 = control / 1 = data, headers, payload); the client pings (control, `type: ping`) and gets a
// pong carrying the ClientConfig; events go out as data frames (`type: event`, message_id, sum, seq, trace_id, JSON
// payload) and the client answers each with the same frame carrying `{code}` (the ack). Frames are encoded with
// protobufjs from the pbbp2 schema (the SDK does not export its own codec).
import type { AddressInfo } from "node:net";
import protobuf from "protobufjs";
import { WebSocketServer, type WebSocket } from "ws";
import type { FeishuFake } from "./feishu.js";
import { json } from "./im-platform.js";

const root = protobuf.Root.fromJSON({
  nested: {
    pbbp2: {
      nested: {
        Header: { fields: { key: { rule: "required", type: "string", id: 1 }, value: { rule: "required", type: "string", id: 2 } } },
        Frame: {
          fields: {
            SeqID: { rule: "required", type: "uint64", id: 1 }, LogID: { rule: "required", type: "uint64", id: 2 },
            service: { rule: "required", type: "int32", id: 3 }, method: { rule: "required", type: "int32", id: 4 },
            headers: { rule: "repeated", type: "Header", id: 5 }, payloadEncoding: { type: "string", id: 6 },
            payloadType: { type: "string", id: 7 }, payload: { type: "bytes", id: 8 }, LogIDNew: { type: "string", id: 9 },
          },
        },
      },
    },
  },
});
const Frame = root.lookupType("pbbp2.Frame");
const SERVICE_ID = 7031;

interface FrameValue {
  method: number;
  headers: { key: string; value: string }[];
  payload?: Uint8Array;
}

function encode(frame: FrameValue): Uint8Array {
  return Frame.encode(Frame.fromObject({ SeqID: 0, LogID: 0, service: SERVICE_ID, ...frame })).finish();
}

/** The long-connection side of the fake. */
export interface FeishuLongConnectionFake {
  /** Open sockets now. */
  connections(): number;
  /** Sockets accepted so far. */
  opened: number;
  /** `callback/ws/endpoint` calls (their AppID), and pings received. */
  endpointCalls: string[];
  pings: number;
  /** Acks received: the event frame's message_id and the `code` the client answered. */
  acks: { messageId: string; code: number }[];
  /** Sends an event (a schema 2.0 `{schema, header, event}`) to every open socket; returns its frame message_id. */
  push(event: Record<string, unknown>): string;
  /** Drops the open sockets as a network failure would (no close frame). */
  drop(): void;
  close(): Promise<void>;
}

/**
 * Adds the long connection to `fake`. The ClientConfig asks for a ping every `pingIntervalS` seconds and a
 * reconnect 1 s after a drop (no random delay), so tests see both quickly.
 */
export async function attachLongConnection(fake: FeishuFake, options: { pingIntervalS?: number } = {}): Promise<FeishuLongConnectionFake> {
  const clientConfig = { PingInterval: options.pingIntervalS ?? 1, ReconnectCount: -1, ReconnectInterval: 1, ReconnectNonce: 0 };
  const tickets = new Set<string>();
  const sockets = new Set<WebSocket>();
  let seq = 0;
  const wss = new WebSocketServer({
    host: "127.0.0.1", port: 0,
    // The URL's ticket is one-time: a socket opened without one the endpoint issued is refused.
    verifyClient: (info: { req: { url?: string } }) => tickets.delete(new URL(info.req.url ?? "/", "ws://fake").searchParams.get("ticket") ?? ""),
  });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const port = (wss.address() as AddressInfo).port;
  const self: FeishuLongConnectionFake = {
    connections: () => sockets.size, opened: 0, endpointCalls: [], pings: 0, acks: [],
    push(event) {
      const messageId = `frame-${++seq}`;
      const frame = encode({ method: 1, headers: [{ key: "type", value: "event" }, { key: "message_id", value: messageId }, { key: "sum", value: "1" }, { key: "seq", value: "0" }, { key: "trace_id", value: `trace-${seq}` }], payload: Buffer.from(JSON.stringify(event)) });
      for (const ws of sockets) ws.send(frame);
      return messageId;
    },
    drop: () => { for (const ws of sockets) ws.terminate(); },
    close: () => new Promise<void>((resolve) => { for (const ws of sockets) ws.terminate(); wss.close(() => resolve()); }),
  };
  fake.wsEndpoint = (call, res) => {
    self.endpointCalls.push(String(call.body.AppID));
    if (call.body.AppID !== fake.appId || call.body.AppSecret !== fake.appSecret) return json(res, 200, { code: 514, msg: "auth failed", data: {} });
    const ticket = `ticket-${++seq}`;
    tickets.add(ticket);
    // The real URL carries more parameters before device_id / service_id (the SDK reads them with qs).
    const url = `ws://127.0.0.1:${port}/ws/v2?fpid=1&aid=1&device_id=dev-${seq}&access_key=k&service_id=${SERVICE_ID}&ticket=${ticket}`;
    json(res, 200, { code: 0, msg: "ok", data: { URL: url, ClientConfig: clientConfig } });
  };
  wss.on("connection", (ws) => {
    sockets.add(ws);
    self.opened++;
    ws.on("close", () => sockets.delete(ws));
    ws.on("message", (data: Buffer) => {
      const frame = Frame.toObject(Frame.decode(data), { longs: Number, bytes: Buffer }) as FrameValue & { payload?: Buffer };
      const header = (key: string) => frame.headers?.find((h) => h.key === key)?.value;
      if (frame.method === 0 && header("type") === "ping") {
        self.pings++;
        ws.send(encode({ method: 0, headers: [{ key: "type", value: "pong" }], payload: Buffer.from(JSON.stringify(clientConfig)) }));
      } else if (frame.method === 1) {
        self.acks.push({ messageId: header("message_id") ?? "", code: Number(JSON.parse(String(frame.payload ?? "{}")).code) });
      }
    });
  });
  return self;
}
