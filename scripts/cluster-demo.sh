#!/usr/bin/env bash
# Two kopek nodes over one PostgreSQL database behind nginx, on loopback, as docs/cluster.md describes; then a
# walk through the balancer that checks what a cluster promises: writes through one node read through the
# other, an event stream through nginx that carries events written through both, and a node stopped in the
# middle while the balancer keeps answering. Stops everything by itself. Needs Debian's postgresql and nginx.
#
#   scripts/with-postgres.sh scripts/cluster-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${KOPEK_TEST_PG:-}" ]]; then
  echo "cluster-demo: run it under scripts/with-postgres.sh (it needs KOPEK_TEST_PG)" >&2
  exit 2
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
[[ -x "$NGINX" ]] || { echo "cluster-demo: nginx is not installed (apt-get install nginx-light)" >&2; exit 2; }

dir="$(mktemp -d /tmp/kopek-cluster-demo.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  [[ -f "$dir/nginx.pid" ]] && kill "$(cat "$dir/nginx.pid")" 2> /dev/null || true
  wait 2> /dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
kopek() { node --import tsx src/main.ts "$@"; }

export KOPEK_DATABASE_URL="$KOPEK_TEST_PG/postgres"
psql_db="kopek_demo_$$"
node -e "
const pg=require('pg');const c=new pg.Client({connectionString:process.env.KOPEK_DATABASE_URL});
c.connect().then(()=>c.query('CREATE DATABASE $psql_db')).then(()=>c.end())"
export KOPEK_DATABASE_URL="$KOPEK_TEST_PG/$psql_db"
export KOPEK_MASTER_KEY="$(node -e "console.log(require('crypto').randomBytes(32).toString('base64'))")"

lb_port="$(free_port)"
ports=("$(free_port)" "$(free_port)")
kopek migrate > /dev/null
key="$(kopek demo --json | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.parse(s).key))")"
for i in 0 1; do
  node --import tsx src/main.ts serve --port "${ports[$i]}" --base-url "http://127.0.0.1:$lb_port" --trust-proxy --log-level warn 2> "$dir/node$i.log" &
  pids+=("$!")
done
for p in "${ports[@]}"; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$p/healthz" > /dev/null && break; sleep 0.1; done
done

cat > "$dir/nginx.conf" << EOF
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
events {}
http {
  access_log off;
  client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
  upstream kopek { server 127.0.0.1:${ports[0]}; server 127.0.0.1:${ports[1]}; }
  server {
    listen 127.0.0.1:$lb_port;
    location / {
      proxy_pass http://kopek;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout;
    }
  }
}
EOF
"$NGINX" -c "$dir/nginx.conf" -p "$dir"
LB="http://127.0.0.1:$lb_port"
for _ in $(seq 50); do curl -fs "$LB/healthz" > /dev/null && break; sleep 0.1; done

fail() { echo "cluster-demo: FAIL ($1)"; exit 1; }
# A stream through the balancer, opened before the writes.
curl -sN -H "Authorization: Bearer $key" "$LB/v1/public/events" > "$dir/stream.txt" &
pids+=("$!")
sleep 0.5
ids=()
for i in $(seq 10); do
  id="$(curl -fs -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d '{"amount": 10000}' "$LB/v1/public/payments" |
    node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.parse(s).payment.id))")"
  ids+=("$id")
  # Read back straight from each node: both know it.
  for p in "${ports[@]}"; do curl -fs -o /dev/null -H "Authorization: Bearer $key" "http://127.0.0.1:$p/v1/public/payments/$id" || fail "node :$p does not know $id"; done
done
echo "cluster-demo: 10 payments made through nginx, each read back from both nodes"
for _ in $(seq 50); do [[ "$(grep -c '^event: payment.created' "$dir/stream.txt")" -ge 10 ]] && break; sleep 0.1; done
[[ "$(grep -c '^event: payment.created' "$dir/stream.txt")" -ge 10 ]] || fail "the stream through nginx carried $(grep -c '^event: payment.created' "$dir/stream.txt") of 10 events"
echo "cluster-demo: the stream through nginx carried all 10 events, in id order: $(grep '^id:' "$dir/stream.txt" | awk '{print $2}' | sort -n -c 2>&1 && echo yes)"

# One node stops (a rolling upgrade): the balancer keeps answering through the other.
kill -TERM "${pids[0]}"
wait "${pids[0]}" 2> /dev/null || true
for i in $(seq 10); do
  code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$LB/v1/public/payments/${ids[$i - 1]}")"
  [[ "$code" == 200 ]] || fail "GET through nginx answered $code with one node stopped"
done
echo "cluster-demo: with one node stopped, nginx still answered 10 of 10"
echo "cluster-demo: PASS"
