#!/usr/bin/env bash
# make docker-test: build the project's Dockerfile and run the image and docker-compose.yml for real, on
# loopback only, with a Docker engine of its own (issue 21). As root; needs docker.io, docker-compose and
# debootstrap (make docker-deps) and the venv (make venv). Not part of `make test`: runs from a fresh clone took
# 8 min 45 s and 9 min 44 s on two cores, 6 min 17 s to 6 min 26 s of it the release build inside the image.
#
#  1. Starts its own dockerd in a temporary directory (data, exec root, socket, pidfile), with no bridge,
#     no iptables, no forwarding, no masquerading. Every container and build runs with --network host:
#     no Docker network is ever created. The trap stops that dockerd, by its pid, however the run ends.
#  2. Base images, with no registry: debootstrap --variant=minbase bookworm, imported as
#     debian:bookworm-slim; the same plus the build packages, the toolchain at /opt/swift/usr (into /usr,
#     as in the official image) and the machine's copies of the Swift packages (/opt/swift-packages, with
#     git's url.insteadOf in /etc/gitconfig, as on this machine), imported as swift:6.3-bookworm, the
#     Dockerfile's default SWIFT_IMAGE. So the Dockerfile builds unchanged: its `swift package resolve`
#     clones the https://github.com URLs of Package.swift, which git inside the build reads from the copies.
#     postgres:15 is scripts/docker/postgres (Debian's postgresql-15 and the official image's entrypoint
#     contract as far as docker-compose.yml uses it).
#  3. docker build of the project (the legacy builder, DOCKER_BUILDKIT=0: BuildKit's
#     `# syntax=` line would fetch a frontend image from a registry), and the image's size.
#  4. The image alone (scripts/docker_check.py single): non-root, /healthz, the web client, the
#     HEALTHCHECK, the drain on `docker stop` (1001, exit 0), the SQLite volume across stop + start.
#  5. docker-compose.yml + scripts/docker/compose.hostnet.yml (scripts/docker_check.py compose):
#     PostgreSQL and two nodes; the redirect; hub-a stopped under a writing client, nothing acked lost.
#
# PEOPLEKEEPER_DOCKER_DIR=DIR keeps the engine's directory (images, build cache) there between runs
# instead of a new temporary one that is deleted: a second run then reuses the base images and the
# build's cached layers (about 30 s instead of 10 minutes).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$REPO/.venv/bin/python}"
# Debian's docker.io client, of the same version as its engine (another docker on PATH may be newer
# and default to BuildKit).
DOCKER_CLI=/usr/bin/docker
SWIFT_TOOLCHAIN=/opt/swift/usr
SWIFT_PACKAGES=/opt/swift-packages
PROJECT=pkdockertest
T0=$(date +%s)

say() { printf '[%4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
die() { echo "docker-test: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (dockerd and debootstrap need it)"
for tool in dockerd debootstrap docker-compose "$DOCKER_CLI"; do
  command -v "$tool" >/dev/null || die "$tool not found: make docker-deps (docker.io docker-compose debootstrap)"
done
[ -x "$PY" ] && "$PY" -c 'import websockets' 2>/dev/null || die "no venv with websockets at $PY: make venv"
[ -d "$SWIFT_TOOLCHAIN/bin" ] || die "no Swift toolchain at $SWIFT_TOOLCHAIN"
[ -d "$SWIFT_PACKAGES" ] || die "no Swift package copies at $SWIFT_PACKAGES"

# The Debian mirror this machine's apt uses (debootstrap's, and apt's inside the images).
MIRROR="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
[ -n "$MIRROR" ] || MIRROR="$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
[ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian

if [ -n "${PEOPLEKEEPER_DOCKER_DIR:-}" ]; then
  WORK="$PEOPLEKEEPER_DOCKER_DIR"; KEEP=1; mkdir -p "$WORK"
else
  WORK="$(mktemp -d /tmp/pk-docker.XXXXXX)"; KEEP=0
fi
ENGINE="$WORK/engine"
mkdir -p "$ENGINE"
export DOCKER_HOST="unix://$ENGINE/sock"
export DOCKER_BUILDKIT=0
DOCKER="$DOCKER_CLI"
DOCKERD_PID=""

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$DOCKERD_PID" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
    say "stopping dockerd (pid $DOCKERD_PID)"
    kill -TERM "$DOCKERD_PID"
    for _ in $(seq 1 60); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$DOCKERD_PID" 2>/dev/null; then
      echo "docker-test: dockerd $DOCKERD_PID still running after 30 s; SIGKILL" >&2
      kill -KILL "$DOCKERD_PID" 2>/dev/null || true
    fi
    wait "$DOCKERD_PID" 2>/dev/null || true
  fi
  # dockerd leaves the host's network namespace bind-mounted at EXEC_ROOT/netns/default: unmount what
  # is left under our own directory (and nothing else).
  awk -v w="$WORK/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    umount "$m" || echo "docker-test: could not unmount $m" >&2
  done
  if [ "$KEEP" = 0 ]; then
    if grep -q " $WORK/" /proc/self/mountinfo; then
      echo "docker-test: mounts left under $WORK; not deleting it" >&2
    else
      rm -rf "$WORK"
    fi
  fi
  if [ "$rc" -eq 0 ]; then say "docker-test: passed"; else say "docker-test: FAILED (exit $rc); engine log: $WORK/dockerd.log"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_ports() {  # N free TCP ports on 127.0.0.1
  "$PY" - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

check_no_networks() {  # only the engine's built-in host and none: no bridge, nothing made by compose
  local nets
  nets="$("$DOCKER" network ls --format '{{.Name}}/{{.Driver}}' | sort | tr '\n' ' ')"
  [ "$nets" = "host/host none/null " ] || die "unexpected Docker networks: $nets"
  say "docker networks: $nets(no bridge)"
}

# ---- 1. the engine ----------------------------------------------------------------------------------------
say "starting dockerd in $ENGINE (no bridge, no iptables, no forwarding, no masquerading)"
dockerd --iptables=false --ip-forward=false --ip-masq=false --bridge=none \
  --data-root "$ENGINE/data" --exec-root "$ENGINE/exec" -H "unix://$ENGINE/sock" \
  --pidfile "$ENGINE/dockerd.pid" >>"$WORK/dockerd.log" 2>&1 &
DOCKERD_PID=$!
for _ in $(seq 1 60); do "$DOCKER" version >/dev/null 2>&1 && break; kill -0 "$DOCKERD_PID" || die "dockerd exited; see $WORK/dockerd.log"; sleep 0.5; done
"$DOCKER" version --format 'engine {{.Server.Version}}, client {{.Client.Version}}' >/dev/null || die "dockerd did not answer in 30 s"
say "dockerd pid $DOCKERD_PID (pidfile: $(cat "$ENGINE/dockerd.pid")): engine $("$DOCKER" version --format '{{.Server.Version}}'), storage driver $("$DOCKER" info --format '{{.Driver}}')"
check_no_networks
# What a kept engine directory may still hold from an earlier run that failed.
"$DOCKER" rm -f -v pk-single >/dev/null 2>&1 || true
"$DOCKER" volume rm pk-test-data >/dev/null 2>&1 || true
leftovers="$("$DOCKER" ps -aq --filter "label=com.docker.compose.project=$PROJECT")"
[ -z "$leftovers" ] || "$DOCKER" rm -f -v $leftovers >/dev/null
"$DOCKER" volume rm "${PROJECT}_postgres-data" >/dev/null 2>&1 || true

# ---- 2. base images ---------------------------------------------------------------------------------------
if ! "$DOCKER" image inspect debian:bookworm-slim >/dev/null 2>&1; then
  say "debootstrap --variant=minbase bookworm ($MIRROR) -> debian:bookworm-slim"
  mkdir -p "$WORK/debs"
  debootstrap --variant=minbase --cache-dir="$WORK/debs" bookworm "$WORK/rootfs-base" "$MIRROR" >"$WORK/debootstrap-base.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap-base.log"; die "debootstrap failed"; }
  tar -C "$WORK/rootfs-base" -c . | "$DOCKER" import -c 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
  rm -rf "$WORK/rootfs-base"
fi
if ! "$DOCKER" image inspect swift:6.3-bookworm >/dev/null 2>&1; then
  # What the official swift:6.3-bookworm image installs for the toolchain, less what only lldb and the REPL use.
  SWIFT_DEBS=binutils,gcc,git,libc6-dev,libcurl4-openssl-dev,libedit2,libgcc-12-dev,libpython3.11,libsqlite3-0,libstdc++-12-dev,libxml2-dev,libncurses6,pkg-config,tzdata,zlib1g-dev,unzip,ca-certificates,curl
  say "debootstrap bookworm + build packages + $SWIFT_TOOLCHAIN + $SWIFT_PACKAGES -> swift:6.3-bookworm"
  mkdir -p "$WORK/debs"
  debootstrap --variant=minbase --cache-dir="$WORK/debs" --include="$SWIFT_DEBS" bookworm "$WORK/rootfs-swift" "$MIRROR" \
    >"$WORK/debootstrap-swift.log" 2>&1 || { tail -20 "$WORK/debootstrap-swift.log"; die "debootstrap failed"; }
  cp -a "$SWIFT_TOOLCHAIN/." "$WORK/rootfs-swift/usr/"
  mkdir -p "$WORK/rootfs-swift/opt"
  cp -a "$SWIFT_PACKAGES" "$WORK/rootfs-swift/opt/"
  for from in https://github.com/ git@github.com: ssh://git@github.com/; do
    git config -f "$WORK/rootfs-swift/etc/gitconfig" --add "url.$SWIFT_PACKAGES/.insteadOf" "$from"
  done
  tar -C "$WORK/rootfs-swift" -c . | "$DOCKER" import -c 'CMD ["bash"]' - swift:6.3-bookworm >/dev/null
  rm -rf "$WORK/rootfs-swift"
fi
say "$("$DOCKER" run --rm --network host swift:6.3-bookworm swift --version 2>/dev/null | head -1) in swift:6.3-bookworm"
say "building postgres:15 (scripts/docker/postgres: Debian's postgresql-15)"
"$DOCKER" build -q --network host -t postgres:15 "$REPO/scripts/docker/postgres" >/dev/null

# ---- 3. the project's image -------------------------------------------------------------------------------
say "docker build --network host -t peoplekeeper-hub:local . (log: $WORK/build.log)"
B0=$(date +%s)
"$DOCKER" build --network host -t peoplekeeper-hub:local "$REPO" >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log"; die "docker build failed"; }
say "built in $(( $(date +%s) - B0 )) s"
grep -E '^(Step|Successfully)' "$WORK/build.log" | sed 's/^/    /' | tail -4
SIZE=$("$DOCKER" image inspect -f '{{.Size}}' peoplekeeper-hub:local)
say "image peoplekeeper-hub:local: $SIZE bytes ($(( SIZE / 1048576 )) MiB); its layers:"
"$DOCKER" history --format '{{.Size}}\t{{.CreatedBy}}' peoplekeeper-hub:local | cut -c1-110 | sed 's/^/    /'
"$DOCKER" run --rm --network host --entrypoint sh peoplekeeper-hub:local -c \
  'ls -l /usr/local/bin/peoplekeeper-hub; ldd /usr/local/bin/peoplekeeper-hub | grep -c "=>" | sed "s/^/shared libraries: /"; ldd /usr/local/bin/peoplekeeper-hub | grep -i swift || echo "no Swift runtime library (static)"' \
  | sed 's/^/    /'

# ---- 4. the image alone -----------------------------------------------------------------------------------
read -r P_SINGLE < <(free_ports 1)
say "docker run peoplekeeper-hub:local on 127.0.0.1:$P_SINGLE with the volume pk-test-data at /app/data"
"$DOCKER" run -d --name pk-single --network host --memory 512m -v pk-test-data:/app/data \
  -e PEOPLEKEEPER_LISTEN_PORT="$P_SINGLE" peoplekeeper-hub:local --config Config/peoplekeeper.yaml --host 127.0.0.1 >/dev/null
DOCKER="$DOCKER_CLI" "$PY" "$REPO/scripts/docker_check.py" single --port "$P_SINGLE" --container pk-single \
  || { "$DOCKER" logs pk-single 2>&1 | tail -30; die "single-node checks failed"; }
"$DOCKER" logs pk-single 2>&1 | grep -E 'listening|shutdown requested|draining|stopped' | cut -c1-160 | sed 's/^/    log: /'
"$DOCKER" stop -t 30 pk-single >/dev/null
"$DOCKER" rm -v pk-single >/dev/null
"$DOCKER" volume rm pk-test-data >/dev/null

# ---- 5. docker-compose.yml --------------------------------------------------------------------------------
read -r PK_PG_PORT PK_HUB_A_PORT PK_HUB_B_PORT < <(free_ports 3)
export PK_PG_PORT PK_HUB_A_PORT PK_HUB_B_PORT
# docker-compose.yml as it is but for the hubs' `ports:` (scripts/docker/compose_without_ports.py says why),
# from the repository's directory (the build context, the secret's file), with the host-network override.
"$PY" "$REPO/scripts/docker/compose_without_ports.py" "$REPO/docker-compose.yml" "$WORK/docker-compose.yml"
say "docker-compose.yml less what host networking cannot run:"
diff "$REPO/docker-compose.yml" "$WORK/docker-compose.yml" | sed 's/^/    /' || true
COMPOSE=(docker-compose --ansi never -p "$PROJECT" --project-directory "$REPO" -f "$WORK/docker-compose.yml"
         -f "$REPO/scripts/docker/compose.hostnet.yml")
say "docker-compose up (PostgreSQL on 127.0.0.1:$PK_PG_PORT, hub-a :$PK_HUB_A_PORT, hub-b :$PK_HUB_B_PORT)"
"${COMPOSE[@]}" up -d --no-build 2>&1 | sed 's/^/    /'
check_no_networks
HUB_A="$("${COMPOSE[@]}" ps -q hub-a)"
DOCKER="$DOCKER_CLI" "$PY" "$REPO/scripts/docker_check.py" compose --a "$PK_HUB_A_PORT" --b "$PK_HUB_B_PORT" \
  --container-a "$HUB_A" --stop-a "${COMPOSE[*]} stop hub-a" \
  || { "${COMPOSE[@]}" logs --no-color --tail 30 2>&1; die "compose checks failed"; }
"${COMPOSE[@]}" ps 2>&1 | sed 's/^/    /'
"${COMPOSE[@]}" logs --no-color hub-a hub-b 2>&1 | grep -E 'listening|room loaded|room created|shutdown requested|stopped' | cut -c1-170 | sed 's/^/    log: /'
"${COMPOSE[@]}" down -v 2>&1 | sed 's/^/    /'
check_no_networks
say "all checks passed"
