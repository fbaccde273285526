"""A TCP proxy that breaks connections on purpose, for the fault tests.

It sits between gcluster and testenv's API server and forwards bytes untouched, so TLS (and
HTTP/2) stays end to end between the two; a kubeconfig whose server is the proxy's address
(127.0.0.1, a name the API server's certificate carries) makes gcluster use it. Faults, set
while traffic flows:

    cut_after(n, count)   connections are reset once n bytes came from the server, `count`
                          times (None: every connection)
    cut_every(t)          every t seconds, every open connection is reset (None: stop)
    cut_all()             resets every open connection now
    refuse_for(t)         for t seconds, new connections are reset as soon as they are accepted
    stall_open()          open connections stop forwarding, and stay open
    stall_next_data()     the next connection to receive anything from the server stops
                          forwarding (holding it), and stays open: for a quiet stream, such as
                          a watch waiting for its next event
    stall_after(n, count) connections stop forwarding once n bytes came from the server, and
                          stay open, `count` times
    lose_answer(size, n, count, upto)
                          once the client sent a chunk of `size` to `upto` bytes (a request
                          with a body, such as a create, among others), n more bytes from
                          the server reach the client, then the client's side is reset while
                          the server's side is closed quietly a moment later, so the server
                          still reads the whole request and answers into the void: an answer
                          lost at byte n. `count` times; n None only measures: each such
                          chunk's size (big_requests), the answer after the last one
                          (answer_bytes)
    latency(s)            every chunk waits s seconds before it is forwarded
    throttle(rate)        bytes from the server flow at most `rate` bytes per second
    clear()               no faults (stalled connections stay stalled)

A connection the server refuses (an API server that is down) is reset towards the client, as
the server would have. Everything listens on 127.0.0.1 only; the threads are daemons and
close() ends every connection.
"""

import socket
import struct
import threading
import time

CHUNK = 65536
UPSTREAM_WINDOW = 65536


def _reset(sock):
    """Closes with RST rather than FIN, as a dying peer or a middlebox does. SHUT_RD sends
    nothing but wakes a thread blocked reading the socket; the RST goes out when the last
    reference to the socket is gone."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class _Connection:
    def __init__(self, proxy, client, server, cut_at, stall_at):
        self.proxy, self.client, self.server = proxy, client, server
        self.cut_at, self.stall_at = cut_at, stall_at
        self.down = 0  # bytes forwarded from the server
        self.stalled = False
        self.closed = threading.Event()
        self.request_at = None  # self.down when the big request went up
        self.lose_at = None  # self.down at which the answer is lost

    def start(self):
        for src, dst, downstream in ((self.client, self.server, False),
                                     (self.server, self.client, True)):
            threading.Thread(target=self._pump, args=(src, dst, downstream), daemon=True).start()

    def cut(self):
        if not self.closed.is_set():
            self.closed.set()
            self.proxy.count("cuts")
            _reset(self.client)
            _reset(self.server)

    def lose(self):
        """The client's side reset, the server's closed quietly a second later."""
        if not self.closed.is_set():
            self.closed.set()
            self.proxy.count("lost answers")
            _reset(self.client)
            threading.Timer(1.0, self.server.close).start()

    def close(self):
        if not self.closed.is_set():
            self.closed.set()
            for s in (self.client, self.server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def _hold(self, src, downstream):
        """A stalled connection: nothing moves until the client gives up (what it still sends is
        read and dropped, to see it close) or the proxy closes."""
        self.stalled = True
        while not downstream and not self.closed.is_set():
            if not src.recv(CHUNK):
                return self.close()
        self.closed.wait()

    def _pump(self, src, dst, downstream):
        try:
            while not self.closed.is_set():
                if self.stalled:
                    return self._hold(src, downstream)
                data = src.recv(CHUNK)
                if not data:
                    return self.close()
                if downstream and self.proxy.claim("next"):
                    return self._hold(src, downstream)
                if not downstream and self.lose_at is None:
                    rule = self.proxy.lose_rule(len(data))
                    if rule:
                        self.request_at = self.down
                        self.lose_at = None if rule[0] is None else self.down + rule[0]
                if downstream and self.lose_at is not None and self.down + len(data) >= \
                        self.lose_at:
                    dst.sendall(data[:self.lose_at - self.down])
                    self.down = self.lose_at
                    return self.lose()
                delay, rate = self.proxy.delays()
                if delay:
                    time.sleep(delay)
                if downstream:
                    limit = min(x for x in (self.cut_at, self.stall_at, float("inf"))
                                if x is not None)
                    if self.down + len(data) >= limit:
                        fault = "cut" if limit == self.cut_at else "stall"
                        if self.proxy.claim(fault):
                            data = data[:int(limit - self.down)]
                            dst.sendall(data)
                            self.down += len(data)
                            if fault == "cut":
                                return self.cut()
                            return self._hold(src, downstream)
                        self.cut_at = self.stall_at = None  # the rule was used up meanwhile
                    self.down += len(data)
                    if rate:
                        time.sleep(len(data) / rate)
                if self.stalled:
                    return self._hold(src, downstream)
                dst.sendall(data)
                if downstream:
                    self.proxy.most_down = max(self.proxy.most_down, self.down)
                if downstream and self.request_at is not None:
                    self.proxy.saw_answer(self.down - self.request_at)
                if not downstream and self.lose_at == self.down:
                    return self.lose()
        except OSError:
            self.cut()


class FaultProxy:
    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.lock = threading.Lock()
        self.connections = []
        self.stats = {"connections": 0, "cuts": 0, "refused": 0, "stalls": 0,
                      "lost answers": 0, "big requests": 0}
        self.answer_bytes = 0  # the answer after the last big request (lose_answer)
        self.big_requests = []  # the size of each big request lose_answer saw, in order
        self.most_down = 0  # the most bytes one connection brought from the server
        self._rules = {}  # "cut" / "stall" -> [bytes, times left or None]
        self._refuse_until = 0.0
        self._latency, self._rate = 0.0, 0
        self._cut_every, self._ticker = None, None
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.running = True
        threading.Thread(target=self._accept_loop, daemon=True).start()

    # -- faults --------------------------------------------------------------------------------

    def cut_after(self, nbytes, count=None):
        with self.lock:
            self._rules["cut"] = [nbytes, count]

    def stall_after(self, nbytes, count=1):
        with self.lock:
            self._rules["stall"] = [nbytes, count]

    def lose_answer(self, request_size, nbytes, count=1, upto=None):
        with self.lock:
            self._rules["lose"] = [request_size, nbytes, count, upto]

    def refuse_for(self, seconds):
        with self.lock:
            self._refuse_until = time.monotonic() + seconds

    def latency(self, seconds):
        with self.lock:
            self._latency = seconds

    def throttle(self, bytes_per_second):
        with self.lock:
            self._rate = bytes_per_second

    def cut_every(self, seconds):
        with self.lock:
            self._cut_every = seconds
            if seconds and not self._ticker:
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()

    def cut_all(self):
        for c in self._open():
            c.cut()

    def stall_next_data(self):
        with self.lock:
            self._rules["next"] = [0, 1]

    def stall_open(self):
        for c in self._open():
            c.stalled = True
        self.count("stalls")

    def clear(self):
        with self.lock:
            self._rules = {}
            self._refuse_until = 0.0
            self._latency, self._rate = 0.0, 0
            self._cut_every = None

    def close(self):
        self.running = False
        self.clear()
        try:
            self.listener.close()
        except OSError:
            pass
        for c in self._open():
            c.close()

    # -- internals -----------------------------------------------------------------------------

    def count(self, what):
        with self.lock:
            self.stats[what] += 1

    def claim(self, fault):
        """Whether a connection that reached the byte limit of rule `fault` still gets it."""
        with self.lock:
            rule = self._rules.get(fault)
            if not rule:
                return False
            if rule[1] is not None:
                rule[1] -= 1
                if rule[1] <= 0:
                    del self._rules[fault]
            if fault != "cut":
                self.stats["stalls"] += 1
            return True

    def lose_rule(self, chunk):
        """(n,) for a connection whose client just sent `chunk` bytes, when lose_answer takes
        it (n None: measure only), else None."""
        with self.lock:
            rule = self._rules.get("lose")
            if not rule or chunk < rule[0] or (rule[3] is not None and chunk > rule[3]):
                return None
            self.stats["big requests"] += 1
            self.big_requests.append(chunk)
            self.answer_bytes = 0  # the answer to this one, the last, is what counts
            if rule[2] is not None:
                rule[2] -= 1
                if rule[2] <= 0:
                    del self._rules["lose"]
            return (rule[1],)

    def saw_answer(self, nbytes):
        with self.lock:
            self.answer_bytes = max(self.answer_bytes, nbytes)

    def delays(self):
        with self.lock:
            return self._latency, self._rate

    def _open(self):
        with self.lock:
            self.connections = [c for c in self.connections if not c.closed.is_set()]
            return list(self.connections)

    def _tick(self):
        while self.running:
            with self.lock:
                period = self._cut_every
            if not period:
                with self.lock:
                    self._ticker = None
                return
            time.sleep(period)
            with self.lock:
                still = self._cut_every
            if still:
                self.cut_all()

    def _accept_loop(self):
        while self.running:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.stats["connections"] += 1
                refusing = time.monotonic() < self._refuse_until
                cut_at = self._rules["cut"][0] if "cut" in self._rules else None
                stall_at = self._rules["stall"][0] if "stall" in self._rules else None
            if refusing:
                self.count("refused")
                _reset(client)
                continue
            try:
                server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                # A small window, as a slow path has: the server's writes wait for the proxy
                # instead of its whole answer sitting in loopback buffers, where it would outlive
                # a server that is stopped mid-answer.
                server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UPSTREAM_WINDOW)
                server.settimeout(5)
                server.connect(self.upstream)
                server.settimeout(None)
                server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                self.count("refused")
                _reset(client)
                continue
            conn = _Connection(self, client, server, cut_at, stall_at)
            with self.lock:
                self.connections.append(conn)
            conn.start()
