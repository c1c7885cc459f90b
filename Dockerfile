# syntax=docker/dockerfile:1
#
# The PeopleKeeper hub (peoplekeeper-hub) in a container. Not needed for development: `make run` is.
#
#   docker build -t peoplekeeper-hub .
#   docker run --rm -p 8080:8080 -v peoplekeeper-data:/app/data peoplekeeper-hub
#
# then open http://localhost:8080/. The image runs the embedded default (Config/peoplekeeper.yaml: SQLite in
# /app/data/peoplekeeper.sqlite); docker-compose.yml runs two nodes in cluster mode (Config/cluster.yaml) on
# PostgreSQL. docs/OPERATIONS.md covers backups, upgrades and the cluster.
#
# Two stages: a Swift toolchain image builds the release binary, and a plain Debian bookworm image runs it.
# The project is built and tested with Swift 6.3.1 on Debian 12 (bookworm); SWIFT_IMAGE picks the toolchain
# image, e.g. --build-arg SWIFT_IMAGE=swift:6.3.1-bookworm to pin it (Package.swift needs Swift 6.1 or later).
ARG SWIFT_IMAGE=swift:6.3-bookworm

# ---- build ------------------------------------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS build

# libwebsockets-dev: the transport (CLibWebSockets, found with pkg-config). libsqlite3-dev: GRDB links the
# system SQLite (its GRDBSQLite module includes <sqlite3.h>).
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update -q \
 && apt-get install -y -q --no-install-recommends libwebsockets-dev pkg-config libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /build

# Dependencies first, so editing the sources does not fetch them again. Package.resolved is not in git
# (.gitignore); when the build context has one it pins the versions, else they are resolved afresh.
COPY Package.* ./
RUN swift package resolve

# SwiftPM checks that every target's directory exists, test targets included, so Tests/ comes too.
COPY Sources ./Sources
COPY Tests ./Tests

# --static-swift-stdlib links the Swift runtime and Foundation into the binary, so the runtime stage needs
# no Swift libraries (instead of copying /usr/lib/swift/linux/*.so across). libwebsockets and SQLite stay
# shared libraries from Debian. swift-backtrace-static prints a symbolicated backtrace if the hub crashes.
RUN swift build -c release --product peoplekeeper-hub --static-swift-stdlib \
 && mkdir /staging \
 && cp "$(swift build -c release --static-swift-stdlib --show-bin-path)/peoplekeeper-hub" /staging/ \
 && cp /usr/libexec/swift/linux/swift-backtrace-static /staging/

# The release build carries DWARF: 199 MB of binary, 77 MB of it debug sections. Without them it is 122 MB,
# and a crash's backtrace still names every function (the symbol table stays), without file and line.
# Build with --build-arg STRIP_DEBUG=no to keep them.
ARG STRIP_DEBUG=yes
RUN if [ "$STRIP_DEBUG" = yes ]; then strip --strip-debug /staging/peoplekeeper-hub; fi

# ---- run --------------------------------------------------------------------------------------------------
FROM debian:bookworm-slim

# libwebsockets17: the runtime of bookworm's libwebsockets-dev (4.1.6); libwebsockets-evlib-ev: its libev
# plugin (and libev4, which the hub links), for transport.eventLoop epoll. libsqlite3-0: SQLite.
# ca-certificates: for TLS peers. curl: the HEALTHCHECK. sqlite3: the CLI, for online backups of the
# embedded store (docs/OPERATIONS.md#backup). libstdc++6 is already in the base image; listed because the
# binary needs it.
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      libwebsockets17 libwebsockets-evlib-ev libsqlite3-0 libstdc++6 ca-certificates curl sqlite3 \
 && rm -rf /var/lib/apt/lists/*

# A fixed uid and gid, so a bind-mounted data directory can be given to it (chown 10001:10001 DIR).
# (useradd --user-group alone gives the group a system gid, 999: the group is made first.)
RUN groupadd --system --gid 10001 peoplekeeper \
 && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin peoplekeeper

# Relative paths in the config (web.root, storage.path, rooms.seed) are relative to this directory.
WORKDIR /app
COPY --from=build /staging/peoplekeeper-hub /usr/local/bin/peoplekeeper-hub
COPY --from=build /staging/swift-backtrace-static /usr/local/libexec/swift-backtrace-static
COPY Config ./Config
COPY Web ./Web

# storage.path (data/peoplekeeper.sqlite, with its -wal and -shm) lives in the volume. The directory is made
# and owned here so that a new named volume starts out writable by the hub's user.
RUN mkdir -p /app/data && chown peoplekeeper:peoplekeeper /app/data
VOLUME /app/data

USER peoplekeeper:peoplekeeper

ENV SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/libexec/swift-backtrace-static

EXPOSE 8080

# /healthz answers 200 "ok", or 503 "draining" once SIGTERM has started the drain.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${PEOPLEKEEPER_LISTEN_PORT:-8080}/healthz" || exit 1

# The hub is PID 1 (exec form): `docker stop` sends SIGTERM, the hub drains (every WebSocket closed with
# 1001, snapshots written, the store flushed) and exits 0.
ENTRYPOINT ["/usr/local/bin/peoplekeeper-hub"]
# Config/peoplekeeper.yaml listens on 127.0.0.1, which is unreachable from outside a container: --host
# 0.0.0.0 (a flag, so it wins over the file and the environment) makes -p 8080:8080 work. Replacing the
# command replaces that too: docker-compose.yml runs Config/cluster.yaml, which listens on 0.0.0.0 itself.
CMD ["--config", "Config/peoplekeeper.yaml", "--host", "0.0.0.0"]
