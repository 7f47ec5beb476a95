"""An integration test of a shop's webhook handling against kopek: pytest and the standard library only.

Run from the project folder: python3 -m pytest examples/python/   (KOPEK_BIN names another kopek executable)
"""
import hashlib
import hmac
import http.client
import http.server
import json
import os
import subprocess
import threading
import time
import urllib.parse

import pytest

KOPEK = os.environ.get("KOPEK_BIN", "dist/kopek")
TOLERANCE_S = 300  # a signature older or newer than this is refused (docs/webhooks.md)


def verified(header, body, secret, now=None):
    """True when an X-PSP-Signature header holds a v2 signature of the raw body: HMAC-SHA256 of "<t>.<body>"."""
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    t = next((v for k, v in parts if k == "t"), "")
    if not t.isdigit() or abs((time.time() if now is None else now) - int(t)) > TOLERANCE_S:
        return False
    want = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    # During a rotation the header carries one v2 per valid secret: any of them may match.
    return any(k == "v2" and hmac.compare_digest(v, want) for k, v in parts)


class Receiver(http.server.BaseHTTPRequestHandler):
    """Your application's webhook handler would be here; this one checks each signature and keeps the event."""

    secret = None  # the ready line's webhook_secret, once kopek has started
    events = []
    refused = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))  # the raw bytes: verify before parsing
        if Receiver.secret is None or not verified(self.headers.get("X-PSP-Signature", ""), body, Receiver.secret):
            Receiver.refused += 1
            self.send_response(400)
        else:
            Receiver.events.append(json.loads(body))
            self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def receiver():
    """A local webhook receiver on a port the system picks; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/webhooks/kopek"
    server.shutdown()


@pytest.fixture(scope="module")
def kopek(receiver):
    """A kopek server with a fresh in-memory database whose demo shop sends its webhooks to the receiver.

    Yields the ready line: {base_url, merchant_id, shop_id, test_key, webhook_secret, webhook_endpoint_id}.
    """
    args = [KOPEK, "serve", "--ephemeral", "--ready-json", "--port", "0", "--webhook-url", receiver]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(proc.stdout.readline())
        Receiver.secret = ready["webhook_secret"]
        yield ready
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def api(kopek, method, path, body=None):
    """Call the API with the test key; returns the parsed JSON answer."""
    url = urllib.parse.urlsplit(kopek["base_url"])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    headers = {"Authorization": f"Bearer {kopek['test_key']}", "Content-Type": "application/json"}
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    res = conn.getresponse()
    answer = json.loads(res.read())
    conn.close()
    assert res.status < 300, f"{method} {path}: {res.status} {answer}"
    return answer


def eventually(check, timeout_s=10):
    until = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < until, "not in time"
        time.sleep(0.05)


def test_paid_order_gets_signed_payment_succeeded_webhook(kopek, receiver):
    created = api(kopek, "POST", "/v1/public/payments", {"amount": 150000, "order_id": "order-1001"})
    payment_id = created["payment"]["id"]
    # The buyer picks SBP on the hosted page; the test bank confirms the payment.
    api(kopek, "POST", f"/v1/test/payments/{payment_id}/simulate", {"action": "open_session", "method": "sbp"})
    api(kopek, "POST", f"/v1/test/payments/{payment_id}/simulate", {"action": "succeed"})

    hook = eventually(lambda: next((e for e in Receiver.events if e["data"]["id"] == payment_id), None))
    assert hook["event"] == "payment.succeeded"
    assert hook["data"]["amount"] == 150000
    assert Receiver.refused == 0, "every webhook kopek sent carried a valid signature"

    # The delivery log says the same from kopek's side: one attempt to the endpoint, answered 200.
    log = eventually(lambda: api(kopek, "GET", f"/v1/test/webhooks/deliveries?payment_id={payment_id}")["items"])
    assert [(a["event"], a["url"], a["response_code"], a["status"]) for a in log] == [("payment.succeeded", receiver, 200, "succeeded")]


def test_signature_check_refuses_a_wrong_secret_a_changed_body_and_an_old_timestamp(kopek):
    body = b'{"event":"payment.succeeded"}'
    t = int(time.time())
    good = hmac.new(kopek["webhook_secret"].encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    assert verified(f"t={t},v2={good}", body, kopek["webhook_secret"])
    assert not verified(f"t={t},v2={good}", body, "whs_someone_elses_secret_000")
    assert not verified(f"t={t},v2={good}", body + b" ", kopek["webhook_secret"])
    assert not verified(f"t={t},v2={good}", body, kopek["webhook_secret"], now=t + TOLERANCE_S + 1)
