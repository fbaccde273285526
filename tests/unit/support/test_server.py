#!/usr/bin/env python3
"""A loopback HTTPS server for the kube client's tests.

It is not an API server: each test scripts the exact answers it wants (statuses, headers,
bodies, streamed chunks, dropped connections) and reads back what the client really sent.

    test_server.py --cert server.pem --key server.key [--client-ca ca.pem] --port-file F

Control endpoints (never recorded):
    POST /_test/script  {"GET /api/v1/...": [answer, ...], ...}   queue answers per method+path
    GET  /_test/log     every recorded request, oldest first, with what the server saw:
                        in_flight  requests it was answering when this one arrived (itself
                                   included): more than 1 means the client sent them together;
                                   a whole answer stops counting before its body is written
                                   (a chunked one before its last chunk),
                                   so a request sent after it never finds it still counted
                        ended_by   for a streamed answer: "server" (it ran to its end) or
                                   "client" (the client hung up first, e.g. during a hold)
    POST /_test/reset   forget scripts and the log; with {"drop_old_connections": true} also
                        close, unanswered and unrecorded, every connection accepted before it
                        when it sends more: for a test whose client is new, where a late
                        request of the test before must not show up in its log or take an
                        answer scripted for it

An answer is a JSON object:
    status (200), headers {}, json {...} | body "text" | chunks [{"data": "...", "delay": s}]
                    (a chunk with "times": n is sent n times: a long answer in a short script;
                    with "until_requests": n it waits, instead of its delay, until n requests
                    are in the log, for at most the delay: an answer held back until the
                    requests a client should send alongside it have arrived; the request's
                    log entry then says "waited_for": "requests" or "timeout")
    hold s          keep a chunked stream open this long after its chunks
    forever "data"  after the chunks, send this chunk again and again until the client leaves
    abort true      end a chunked stream without its final chunk
    action "reset"  answer nothing: reset the connection; "close": close it quietly
    repeat true     stays queued (serves every later request)
    remember "GET /path"  before answering, queue an answer for that request whose json is this
                    request's body (an object as a create stored it), e.g. with action "reset":
                    a create that went through but whose answer was lost
    when {k: v}     only for requests whose query has these values (v null: k absent)
    require_auth v  answer 401 (and keep the answer queued) unless Authorization == v
Unscripted requests get a 404 Status.
"""
import argparse
import json
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.scripts = {}
        self.log = []
        self.connections = 0
        self.in_flight = 0
        self.epoch = 0  # how many resets have dropped the connections before them


STATE = State()


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def matches(answer, query):
    for key, want in (answer.get("when") or {}).items():
        got = query.get(key, [None])[0]
        if got != want:
            return False
    return True


def take_answer(key, query, authorization):
    with STATE.lock:
        queue = STATE.scripts.get(key, [])
        for i, answer in enumerate(queue):
            if not matches(answer, query):
                continue
            need = answer.get("require_auth")
            if need is not None and authorization != need:
                return {"status": 401, "json": status_body(401, "Unauthorized", "Unauthorized")}
            if not answer.get("repeat"):
                queue.pop(i)
            return answer
    return {"status": 404, "json": status_body(404, "NotFound", "no script for " + key)}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        self.request.do_handshake()
        super().setup()
        with STATE.lock:
            STATE.connections += 1
            self.conn_id = STATE.connections

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, *args):
        pass

    def client_cn(self):
        try:
            cert = self.request.getpeercert()
        except (ValueError, OSError):
            return None
        for part in (cert or {}).get("subject", ()):
            for key, value in part:
                if key == "commonName":
                    return value
        return None

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8", "replace") if length else ""

    def send_json(self, code, doc):
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.answered()
        self.end_headers()
        self.wfile.write(data)

    def control(self, path, body):
        with STATE.lock:
            if path == "/_test/script":
                for key, answers in json.loads(body).items():
                    STATE.scripts.setdefault(key, []).extend(answers)
                reply = {"ok": True}
            elif path == "/_test/log":
                reply = list(STATE.log)
            elif path == "/_test/reset":
                STATE.scripts.clear()
                STATE.log.clear()
                if json.loads(body or "{}").get("drop_old_connections"):
                    STATE.epoch += 1
                reply = {"ok": True}
            else:
                reply = {"error": "unknown control path"}
        self.send_json(200, reply)

    def handle_any(self):
        url = urlsplit(self.path)
        body = self.read_body()
        if url.path.startswith("/_test/"):
            self._answered = True  # control requests are not counted
            return self.control(url.path, body)
        if self.request.accepted_in_epoch != STATE.epoch:
            self.close_connection = True  # an earlier test's connection
            return
        query = parse_qs(url.query, keep_blank_values=True)
        self._answered = False  # one handler serves every request of its connection: reset
        with STATE.lock:
            STATE.in_flight += 1
            self.entry = {
                "method": self.command, "path": url.path, "query": url.query,
                "params": {k: v[0] for k, v in query.items()},
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body, "connection": self.conn_id, "client_cn": self.client_cn(),
                "time": time.monotonic(), "in_flight": STATE.in_flight,
            }
            STATE.log.append(self.entry)
        try:
            answer = take_answer(self.command + " " + url.path, query,
                                 self.headers.get("Authorization"))
            if answer.get("remember"):
                with STATE.lock:
                    STATE.scripts.setdefault(answer["remember"], []).append(
                        {"json": json.loads(body)})
            self.answer(answer)
        finally:
            self.answered()

    def answered(self):
        """The request stops counting as in flight, once. A whole answer calls this before its
        last bytes go out: once the client has them it may send its next request at once, which
        must not find this one still counted (the round trips tests count would be wrong)."""
        if self._answered:
            return
        self._answered = True
        with STATE.lock:
            STATE.in_flight -= 1

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    def answer(self, a):
        action = a.get("action")
        if action in ("reset", "close"):
            if action == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        self.send_response(a.get("status", 200))
        headers = dict(a.get("headers") or {})
        if "chunks" in a:
            headers.setdefault("Content-Type", "text/plain")
            headers["Transfer-Encoding"] = "chunked"
            for name, value in headers.items():
                for v in value if isinstance(value, list) else [value]:
                    self.send_header(name, v)
            self.end_headers()
            return self.stream(a)
        if "json" in a:
            data = json.dumps(a["json"]).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            data = a.get("body", "").encode()
            headers.setdefault("Content-Type", "text/plain")
        headers["Content-Length"] = str(len(data))
        for name, value in headers.items():
            for v in value if isinstance(value, list) else [value]:
                self.send_header(name, v)
        self.end_headers()
        self.wfile.write(data)

    def client_left(self, seconds):
        """Waits up to `seconds` for the client to hang up. While an answer streams, an HTTP/1.1
        client sends nothing on its connection, so the socket turning readable (a TLS
        close_notify, or the end of the stream) means it is gone."""
        ready, _, _ = select.select([self.connection], [], [], seconds)
        return bool(ready)

    def ended_by(self, who):
        with STATE.lock:
            self.entry["ended_by"] = who

    def stream(self, a):
        try:
            for chunk in a["chunks"]:
                data = chunk["data"].encode()
                for _ in range(chunk.get("times", 1)):
                    if "until_requests" in chunk:
                        deadline = time.monotonic() + chunk.get("delay", 0)
                        waited_for = "timeout"
                        while time.monotonic() < deadline:
                            with STATE.lock:
                                if len(STATE.log) >= chunk["until_requests"]:
                                    waited_for = "requests"
                                    break
                            time.sleep(0.01)
                        with STATE.lock:
                            self.entry["waited_for"] = waited_for
                    else:
                        time.sleep(chunk.get("delay", 0))
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
            if a.get("forever"):
                data = a["forever"].encode()
                chunk = b"%x\r\n%s\r\n" % (len(data), data)
                while True:  # ends when the client hangs up (OSError) or at --lifetime
                    self.wfile.write(chunk)
            if self.client_left(a.get("hold", 0)):
                self.ended_by("client")
                self.close_connection = True
                return
            self.ended_by("server")
            if a.get("abort"):
                self.close_connection = True
                self.connection.close()
                return
            # As a whole answer: once the client has the last chunk it may send its next request
            # at once, which must not find this one still counted.
            self.answered()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.ended_by("client")
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, context):
        self.context = context
        super().__init__(("127.0.0.1", 0), Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tls = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        # Taken here, in the accepting thread: connections are accepted in the order they
        # were made, so one made before a reset's own connection carries the old epoch.
        tls.accepted_in_epoch = STATE.epoch
        return tls, addr

    def handle_error(self, request, client_address):
        pass  # failed handshakes are what some tests are about


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--client-ca")
    p.add_argument("--port-file", required=True)
    p.add_argument("--lifetime", type=float, default=300)
    args = p.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["http/1.1"])
    if args.client_ca:
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(args.client_ca)
    server = Server(context)

    # Safety nets: the server never outlives the test that started it, even one that crashed.
    threading.Timer(args.lifetime, lambda: os._exit(0)).start()
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
