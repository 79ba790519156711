# cairn in a container: `cairn serve` on a database in the /data volume.
# Build:  docker build -t cairn .
# Run:    docker run -v cairn-data:/data -p 7878:7878 \
#           -v "$PWD/token.txt:/run/secrets/cairn-token:ro" cairn \
#           serve /data/db --create --arity 4 --hash blake3 \
#           --listen 0.0.0.0:7878 --token-file /run/secrets/cairn-token

FROM rust:1.95 AS builder
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin cairn \
    && install -m 0755 target/release/cairn /usr/local/bin/cairn

FROM debian:bookworm-slim
# curl only for the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin cairn \
    && mkdir -p /data \
    && chown cairn:cairn /data
COPY --from=builder /usr/local/bin/cairn /usr/local/bin/cairn
USER cairn
WORKDIR /data
VOLUME ["/data"]
EXPOSE 7878
# Inside a container the server must listen beyond loopback to be reachable:
# give it a write token (--token-file), or it warns at start.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD curl -fsS http://127.0.0.1:7878/healthz || exit 1
ENTRYPOINT ["cairn"]
CMD ["serve", "/data/db", "--create", "--arity", "4", "--hash", "blake3", "--listen", "0.0.0.0:7878"]
