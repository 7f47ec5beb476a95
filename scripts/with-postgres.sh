#!/usr/bin/env bash
# Run a command against a throwaway PostgreSQL server: initdb into a temp folder, start it on a free loopback
# port, run the command with KOPEK_TEST_PG=postgres://kopek@127.0.0.1:PORT, then stop the server and delete
# the folder whatever the command did. Needs Debian's postgresql package (PG_BIN overrides where its programs
# are). As root, the server runs as the postgres user, as PostgreSQL requires.
#
#   scripts/with-postgres.sh npm test
set -euo pipefail

PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)}"
if [[ -z "$PG_BIN" || ! -x "$PG_BIN/initdb" ]]; then
  echo "with-postgres: no PostgreSQL server programs found (apt-get install postgresql, or set PG_BIN)" >&2
  exit 2
fi

dir="$(mktemp -d /tmp/kopek-pg.XXXXXX)"
as_pg=()
if [[ "$(id -u)" == 0 ]]; then
  chown postgres "$dir"
  as_pg=(runuser -u postgres --)
fi
port="$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"

stop() {
  "${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop > /dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

"${as_pg[@]}" "$PG_BIN/initdb" -D "$dir/data" -A trust -U kopek --no-sync > "$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
# Connections: the suite runs two test files at once, each with servers of a pool of 10 and cluster tests of
# three nodes; 400 leaves room. fsync stays on: the tests check durability as production runs it.
"${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=256MB" start > /dev/null
echo "with-postgres: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"

export KOPEK_TEST_PG="postgres://kopek@127.0.0.1:$port"
"$@"
