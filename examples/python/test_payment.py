"""An integration test of a shop's webhook handling against kopek: pytest and the standard library only.

Run from the project folder: python3 -m pytest examples/python/   (KOPEK_BIN names another kopek executable)
"""
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


class Receiver(http.server.BaseHTTPRequestHandler):
    """Your application's webhook handler would be here; this one keeps every event it gets."""

    events = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.events.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def kopek():
    """A kopek server with a fresh in-memory database; yields its {base_url, merchant_id, shop_id, test_key}."""
    proc = subprocess.Popen([KOPEK, "serve", "--ephemeral", "--ready-json", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        yield json.loads(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def receiver():
    """A local webhook receiver; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/webhooks/kopek"
    server.shutdown()


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


def test_paid_order_gets_payment_succeeded_webhook(kopek, receiver):
    # The payment names its own webhook URL, so no endpoint needs setting up.
    created = api(kopek, "POST", "/v1/public/payments", {"amount": 150000, "order_id": "order-1001", "webhook_url": receiver})
    payment_id = created["payment"]["id"]
    # The buyer picks SBP on the hosted page; the test bank confirms the payment.
    api(kopek, "POST", f"/v1/test/payments/{payment_id}/simulate", {"action": "open_session", "method": "sbp"})
    api(kopek, "POST", f"/v1/test/payments/{payment_id}/simulate", {"action": "succeed"})

    hook = eventually(lambda: next((e for e in Receiver.events if e["data"]["id"] == payment_id), None))
    assert hook["event"] == "payment.succeeded"
    assert hook["data"]["amount"] == 150000

    # The delivery log says the same from kopek's side: one attempt, answered 200.
    log = eventually(lambda: api(kopek, "GET", f"/v1/test/webhooks/deliveries?payment_id={payment_id}")["items"])
    assert [(a["event"], a["url"], a["response_code"], a["status"]) for a in log] == [("payment.succeeded", receiver, 200, "succeeded")]
