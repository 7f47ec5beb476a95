#!/bin/sh
# An integration check with curl and a POSIX shell: start kopek in memory, pay an order, and read from the
# delivery log that kopek sent payment.succeeded to the shop's webhook URL.
# Run from the project folder: sh examples/shell/payment-test.sh   (KOPEK_BIN names another kopek executable)
set -eu
KOPEK="${KOPEK_BIN:-dist/kopek}"
HOOK_URL="${HOOK_URL:-http://127.0.0.1:9/webhooks/kopek}"   # your app's receiver; the log shows the attempt either way

out=$(mktemp)
"$KOPEK" serve --ephemeral --ready-json --port 0 > "$out" &
server=$!
trap 'kill "$server" 2>/dev/null; rm -f "$out"' EXIT
while [ ! -s "$out" ]; do sleep 0.1; done
ready=$(head -n 1 "$out")
field() { printf '%s' "$1" | sed -E "s/.*\"$2\":\"([^\"]*)\".*/\1/"; }
BASE=$(field "$ready" base_url)
KEY=$(field "$ready" test_key)

api() {   # api METHOD PATH [JSON]
  curl -sS --fail-with-body -X "$1" "$BASE$2" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' ${3:+-d "$3"}
}

PAYMENT=$(field "$(api POST /v1/public/payments "{\"amount\": 150000, \"order_id\": \"order-1001\", \"webhook_url\": \"$HOOK_URL\"}")" id)
api POST "/v1/test/payments/$PAYMENT/simulate" '{"action": "open_session", "method": "sbp"}' > /dev/null
api POST "/v1/test/payments/$PAYMENT/simulate" '{"action": "succeed"}' > /dev/null

status=$(field "$(api GET "/v1/public/payments/$PAYMENT")" status)
[ "$status" = succeeded ] || { echo "FAIL: payment is $status"; exit 1; }
tries=0
until api GET "/v1/test/webhooks/deliveries?payment_id=$PAYMENT" | grep -q '"event":"payment.succeeded"'; do
  tries=$((tries + 1))
  [ "$tries" -lt 100 ] || { echo "FAIL: no payment.succeeded delivery"; exit 1; }
  sleep 0.1
done
echo "ok: payment $PAYMENT succeeded and kopek sent payment.succeeded to $HOOK_URL"
