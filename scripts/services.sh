#!/usr/bin/env bash
# Starts or stops the PostgreSQL and Redis servers the scale-out tests use, on loopback, from Debian's packages.
#
#   scripts/services.sh start   # prints `export DEERFLOW_TEST_PG_URL=...` / `export DEERFLOW_TEST_REDIS_URL=...`
#   scripts/services.sh stop
#   eval "$(scripts/services.sh start)"   # in a shell: export the URLs
#
# Data lives in $DEERFLOW_SERVICES_DIR (default /tmp/deerflow-services), ports in DEERFLOW_PG_PORT (default 55432)
# and DEERFLOW_REDIS_PORT (default 56379). Exits non-zero when a server cannot start: the tests that need them
# never skip. PostgreSQL refuses to run as root, so as root the cluster is owned by and run as `postgres`.
set -euo pipefail

DIR="${DEERFLOW_SERVICES_DIR:-/tmp/deerflow-services}"
PG_PORT="${DEERFLOW_PG_PORT:-55432}"
REDIS_PORT="${DEERFLOW_REDIS_PORT:-56379}"
PG_BIN="${DEERFLOW_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
PG_DATA="$DIR/pg"
PG_LOG="$DIR/pg.log"
REDIS_LOG="$DIR/redis.log"
REDIS_PID="$DIR/redis.pid"

log() { echo "services: $*" >&2; }

# Runs a PostgreSQL binary as the cluster owner (postgres when we are root).
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
  [ -x "$PG_BIN/pg_ctl" ] || { log "PostgreSQL binaries not found (apt-get install postgresql)"; return 1; }
  mkdir -p "$DIR"
  if [ "$(id -u)" = 0 ]; then chmod 755 "$DIR"; fi
  if [ ! -s "$PG_DATA/PG_VERSION" ]; then
    rm -rf "$PG_DATA"
    mkdir -p "$PG_DATA"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$PG_DATA"; fi
    # trust on loopback only: a throwaway test cluster, never reachable from outside the machine.
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
      || { cat "$DIR/initdb.log" >&2; return 1; }
  fi
  if as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then return 0; fi
  touch "$PG_LOG"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$PG_LOG"; fi
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DATA -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null || { tail -20 "$PG_LOG" >&2; return 1; }
}

redis_start() {
  command -v redis-server >/dev/null || { log "redis-server not found (apt-get install redis-server)"; return 1; }
  mkdir -p "$DIR/redis"
  if [ -s "$REDIS_PID" ] && kill -0 "$(cat "$REDIS_PID")" 2>/dev/null; then return 0; fi
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --pidfile "$REDIS_PID" --logfile "$REDIS_LOG" \
    --dir "$DIR/redis" --save "" --appendonly no --protected-mode yes >/dev/null
}

wait_ready() {
  local i
  for i in $(seq 1 100); do
    if as_pg "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
      return 0
    fi
    sleep 0.2
  done
  log "PostgreSQL or Redis did not become ready within 20 s (logs: $PG_LOG, $REDIS_LOG)"
  return 1
}

start() {
  pg_start || { log "cannot start PostgreSQL"; exit 1; }
  redis_start || { log "cannot start Redis"; exit 1; }
  wait_ready || exit 1
  echo "export DEERFLOW_TEST_PG_URL=postgres://postgres@127.0.0.1:$PG_PORT/postgres"
  echo "export DEERFLOW_TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
}

stop() {
  if [ -s "$PG_DATA/PG_VERSION" ] && [ -x "$PG_BIN/pg_ctl" ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ -s "$REDIS_PID" ]; then
    local pid
    pid="$(cat "$REDIS_PID")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$REDIS_PID"
  fi
  if [ "${1:-}" = "--purge" ]; then rm -rf "$DIR"; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start|stop [--purge]" >&2; exit 2 ;;
esac
