# syntax=docker/dockerfile:1
# cairn in a container: `cairn serve` on a database in the /data volume.
#
# Build:  docker build --build-arg CAIRN_BUILD_COMMIT="$(git rev-parse --short=12 HEAD)" -t cairn .
# Run:    docker run -v cairn-data:/data -p 7878:7878 \
#           -v "$PWD/token.txt:/run/secrets/cairn-token:ro" \
#           -e CAIRN_TOKEN_FILE=/run/secrets/cairn-token cairn
#
# The server listens on $CAIRN_LISTEN (0.0.0.0:7878 here) and the health
# check asks that port: change the port with -e CAIRN_LISTEN=0.0.0.0:PORT,
# not with --listen. Without a write token (CAIRN_TOKEN_FILE or
# --token-file) a server listening beyond loopback refuses writes (403);
# reads, /healthz, /readyz and /metrics are served either way.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
# .git is not sent to the builder (.dockerignore): the commit comes in as
# an argument, for `cairn --version` and cairn_build_info.
ARG CAIRN_BUILD_COMMIT=unknown
ENV CAIRN_BUILD_COMMIT=${CAIRN_BUILD_COMMIT} \
    CARGO_INCREMENTAL=0 \
    CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=symbols
COPY . .
# The registry and target directories are cache mounts: a rebuild after a
# source change recompiles only the workspace's crates, not the
# dependencies. The binary is copied out of the cache in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin cairn \
    && install -m 0755 target/release/cairn /usr/local/bin/cairn \
    && /usr/local/bin/cairn --version

FROM debian:bookworm-slim
# curl only for the health check. Versions follow Debian's stable updates
# (security fixes), so they are not pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin cairn \
    && mkdir -p /data \
    && chown 10001:10001 /data
COPY --from=builder /usr/local/bin/cairn /usr/local/bin/cairn
# The numeric id, so that the runtime need not resolve the name.
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
ENV CAIRN_LISTEN=0.0.0.0:7878 \
    CAIRN_LOG_FORMAT=json
EXPOSE 7878
# Liveness on the port CAIRN_LISTEN names (readiness is /readyz, for an
# orchestrator's own probe).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/bin/sh", "-c", "curl -fsS \"http://127.0.0.1:${CAIRN_LISTEN##*:}/healthz\" > /dev/null || exit 1"]
ENTRYPOINT ["cairn"]
CMD ["serve", "/data/db", "--create", "--arity", "4", "--hash", "blake3"]
