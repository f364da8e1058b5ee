# syntax=docker/dockerfile:1
# check=skip=SecretsUsedInArgOrEnv
# (OPENAI_API_KEY below is deliberately EMPTY: config/config.yaml references $OPENAI_API_KEY, and an unset
# variable would fail the config load. Pass the real key at run time, never at build time.)
#
# deerflow-gateway image.
#   docker build -t deerflow-gateway .
#   docker run -p 8001:8001 -e OPENAI_API_KEY=sk-... -v deerflow-agents:/app/agents -v deerflow-home:/app/.deer-flow deerflow-gateway
# Mount your own config/, agents/ and runtime data (.deer-flow/) over the volumes declared below (named volumes, so
# the next container sees the same accounts, threads and agents). Several gateways: deploy/compose.yaml. The server runs
# as the `node` user (uid 1000): bind-mounted host directories for agents/ and .deer-flow/ must be writable by it.
#
# Node: package.json requires ^20.20.2 and .npmrc sets engine-strict, so the base image must be 20.20.2 or newer
# (pull a fresh node:20 image, or pin one: --build-arg NODE_VERSION=20.20.2). Both stages use the same version,
# so the native better-sqlite3 addon built below matches the runtime.
ARG NODE_VERSION=20

# ---- build: install every dependency, then drop the dev ones ---------------------------------------------------
FROM node:${NODE_VERSION}-bookworm AS build
# better-sqlite3 compiles from source (node-gyp) when no prebuilt binary can be downloaded. The full bookworm image
# already has these; installing them explicitly keeps the requirement visible.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Manifests first, so the slow `npm ci` layer is reused until the lock file changes.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY . .
# `npm run build` transpiles src/ and routes/ to dist/ (esbuild): the server runs as plain JavaScript, without the
# tsx loader. agents/ and skills/ are created in case the build context lacks them (git keeps no empty directories).
RUN npm run build \
    && npm prune --omit=dev --no-audit --no-fund \
    && mkdir -p agents skills config

# ---- runtime -----------------------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8001 \
    DEER_FLOW_HOME=/app/.deer-flow \
    OPENAI_API_KEY="" \
    OPENAI_BASE_URL=https://api.openai.com/v1
WORKDIR /app
# Code and dependencies stay root-owned (read-only for the server); only the mounted data directories belong to
# `node`. The project root is the working directory, so config/config.yaml, agents/ and skills/ resolve here.
COPY --from=build /app/package.json /app/tsconfig.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/src ./src
COPY --from=build /app/routes ./routes
COPY --from=build /app/dist ./dist
COPY --from=build /app/scripts/v8-flags.mjs ./scripts/v8-flags.mjs
COPY --from=build /app/skills ./skills
COPY --from=build --chown=node:node /app/config ./config
COPY --from=build --chown=node:node /app/agents ./agents
# The chown also covers the directories themselves, whatever COPY --chown does with a destination it creates.
RUN mkdir -p .deer-flow && chown node:node config agents .deer-flow
USER node
# Declared last: a new named volume is seeded from the image's content and ownership at these paths.
VOLUME ["/app/config", "/app/agents", "/app/.deer-flow"]
EXPOSE 8001
# GET /health answers 200 while the process serves (also when a bad config edit is reported as "degraded").
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8001) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node ends up PID 1 (sh execs it): SIGTERM from `docker stop` reaches the server (src/server.ts, compiled). A single
# gateway interrupts in-flight runs and waits up to 5 s for them, within docker's default 10 s stop timeout; gateways
# sharing runs (deploy/compose.yaml) finish them for DEER_FLOW_SHUTDOWN_GRACE_SECONDS, then hand them over.
# V8 heap sizing (docs/operations.md "Heap sizing"): a 1.5 GB old-generation cap here, and the flags scripts/v8-flags.mjs
# prints on the command line (smaller young generation, full collections at +25% growth), as `npm start` does; `sh`
# execs node, so node is still PID 1. Override with `docker run -e NODE_OPTIONS=...` / `-e DEER_FLOW_V8_FLAGS=...`.
ENV NODE_OPTIONS="--max-old-space-size=1536"
CMD ["sh", "-c", "exec node $(node scripts/v8-flags.mjs) dist/src/server.js"]
