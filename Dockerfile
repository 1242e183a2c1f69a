# Interlock for Stripe: one image for every role (api, webhooks, worker, facts) and for the offline sandbox.
# Runtime dependencies only. No build step to get wrong: bin/interlock.js compiles the TypeScript into
# node_modules/.cache/interlock at its first start (bin/compiled.js), which the image does once below.

# --- dependencies: installed once, from the lockfile, without dev tools ---
FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# --- runtime: the code and the dependencies, run as the unprivileged node user ---
FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    INTERLOCK_DATA_DIR=/data \
    INTERLOCK_HOST=0.0.0.0 \
    INTERLOCK_PORT=3000
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY queues ./queues
COPY webhooks ./webhooks
COPY sandbox ./sandbox
COPY scenarios ./scenarios
# The compiled copy every role starts from, made here while the image is writable (the node user cannot write /app).
RUN node bin/interlock.js --version
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# Health is per role (only the api and webhooks roles listen), so docker-compose.yml states each service's check.
ENTRYPOINT ["node", "bin/interlock.js"]
CMD ["serve"]
