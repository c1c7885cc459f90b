#!/bin/bash
# The stand-in postgres:15 image's entrypoint (see Dockerfile beside it): initialise $PGDATA on the first
# start with POSTGRES_USER, POSTGRES_DB and the password of POSTGRES_PASSWORD_FILE (or POSTGRES_PASSWORD),
# then exec the server as the postgres user (PID 1, so `docker stop` reaches it).
set -euo pipefail

if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi

if [ "$1" = 'postgres' ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = 'postgres' ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    password="$(< "$POSTGRES_PASSWORD_FILE")"
  else
    password="${POSTGRES_PASSWORD:-}"
  fi
  if [ -z "$password" ]; then
    echo "docker-entrypoint: set POSTGRES_PASSWORD_FILE or POSTGRES_PASSWORD" >&2
    exit 1
  fi
  pwfile="$(mktemp)"
  printf '%s\n' "$password" > "$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
         --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  # As the official image: every TCP client with a password, on every address.
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  # The database, made by a server listening on the Unix socket only.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$db" != postgres ]; then
    psql -v ON_ERROR_STOP=1 -q --username "$user" --dbname postgres \
         -c "CREATE DATABASE \"$db\" OWNER \"$user\""
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "docker-entrypoint: initialised $PGDATA (user $user, database $db)"
fi

exec "$@"
