// IM channels (DeerFlow app/gateway/routers/channels.py + channel_connections.py): the channel status, the
// Settings -> Channels tab's per-user connections (providers, one-time connect codes, list/remove), and the
// platforms' webhooks. The service lives on `app.deerflow.channels` (null when no channel is configured: the app
// then reads "disabled" and hides the tab).
import type { FastifyInstance, FastifyRequest } from "fastify";
import { principalOf } from "../src/auth/principal.js";
import { BadRequestError } from "../src/errors.js";
import { doc } from "./openapi.js";

/** A webhook body's ceiling: a platform event with a 1 MB message fits; the manager answers an over-long one in the chat. */
const WEBHOOK_BODY_LIMIT = 2 * 1024 * 1024;

type ProviderParams = { Params: { provider: string } };
type IdParams = { Params: { id: string } };

/** Registers the channel routes under `/api`. */
export async function channelRoutes(app: FastifyInstance): Promise<void> {
  const service = () => app.deerflow.channels;
  const userId = (request: FastifyRequest) => principalOf(request).id;

  const status = async () => service()?.status() ?? { service_running: false, channels: {} };
  app.get("/channels", { schema: doc("channels", "Status of the IM channels") }, status);
  app.get("/channels/", { schema: doc("channels", "Status of the IM channels") }, status);
  app.get("/channels/providers", { schema: doc("channels", "Channel providers and the caller's connection to each") }, async (request) => service()?.providers(userId(request)) ?? { enabled: false, providers: [] });
  app.get("/channels/connections", { schema: doc("channels", "The caller's channel connections") }, async (request) => service()?.connections(userId(request)) ?? { connections: [] });
  app.post<ProviderParams>("/channels/:provider/connect", { schema: doc("channels", "A one-time code that binds a platform identity to the caller") }, async (request) => {
    const channels = service();
    if (!channels) throw new BadRequestError("Channel connections are disabled");
    return channels.connect(request.params.provider, userId(request));
  });
  app.delete<IdParams>("/channels/connections/:id", { schema: doc("channels", "Remove one of the caller's channel connections") }, async (request, reply) => {
    const channels = service();
    if (!channels) throw new BadRequestError("Channel connections are disabled");
    await channels.disconnect(request.params.id, userId(request));
    return reply.code(204).send();
  });
  // Bot credentials come from config.yaml (channels.<provider>), read at start-up; the Settings form cannot set them.
  const credentialsFromConfig = async (request: FastifyRequest<ProviderParams>) => {
    throw new BadRequestError(`Channel credentials are set in config.yaml (channels.${request.params.provider}) and need a restart; they cannot be changed from Settings`);
  };
  app.post<ProviderParams>("/channels/:provider/runtime-config", { schema: doc("channels", "Set a provider's bot credentials (refused: they come from config.yaml)") }, credentialsFromConfig);
  app.delete<ProviderParams>("/channels/:provider/runtime-config", { schema: doc("channels", "Remove a provider's bot credentials (refused: they come from config.yaml)") }, credentialsFromConfig);
  app.post<ProviderParams>("/channels/:provider/restart", { schema: doc("channels", "Restart a channel (refused: channels restart with the gateway)") }, async () => {
    throw new BadRequestError("Channels restart with the gateway (their settings are read at start-up)");
  });

  // Webhooks get their body as text: signatures are over its exact bytes. Public routes (auth-plugin.ts): the
  // platform's signature is the authentication.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "string", bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) => done(null, body));
    scope.post<ProviderParams>("/channels/webhooks/:provider", { bodyLimit: WEBHOOK_BODY_LIMIT, schema: doc("channels", "A platform's event webhook (Telegram secret token / Slack signing secret / Feishu signature or token verified)") }, async (request, reply) => {
      const channels = service();
      if (!channels) return reply.code(404).send({ detail: "No channel is configured" });
      const answer = await channels.webhook(request.params.provider, { headers: request.headers, rawBody: typeof request.body === "string" ? request.body : "" });
      return reply.code(answer.status).send(answer.body);
    });
  });
}
