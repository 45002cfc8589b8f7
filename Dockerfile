# syntax=docker/dockerfile:1
# One image for every agentloom process — `migrate`, `api`, `worker` (and `validate`, `status`, …) — chosen by
# the command given to its entrypoint, the agentloom CLI. It runs the compiled dist/, never the TypeScript sources.
#   docker build -t agentloom .        docker run --rm agentloom --help
# docker-compose.yml beside this file runs PostgreSQL, Redis, migrate, api and workers from it.

ARG NODE_VERSION=20

# 1. Compile: the full dependency tree (TypeScript and the types are dev dependencies), `npm run build` → dist/.
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY scripts/bundle-cli.ts ./scripts/bundle-cli.ts
RUN npm run build

# 2. Production dependencies only (tsx stays: it loads TypeScript apps modules given with --apps).
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# 3. Runtime: compiled code, production dependencies, migrations and the example apps, owned by root and run by
# the unprivileged `node` user (uid 1000), so the process cannot change its own code.
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production
# Two glibc malloc arenas instead of 8 per core: ~10 MB less native memory per process in the soak (SOAK.md), no
# measurable cost (the JavaScript runs on one thread; the rest of Node's threads allocate little).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY examples ./examples
USER node
# api (--port / PORT), worker metrics (--metrics-port / AGENTLOOM_METRICS_PORT)
EXPOSE 8080 9464
ENTRYPOINT ["node", "bin/agentloom.js"]
CMD ["--help"]
