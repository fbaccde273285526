"""A TCP proxy between gcluster and testenv's API server that can cut every connection at once,
as a dropped network path or a restarting load balancer does, for tests/cluster/test_job_connect.py.

It forwards bytes untouched, so TLS (and HTTP/2) stays end to end; a kubeconfig whose server is
the proxy's 127.0.0.1 address makes gcluster use it (the API server's certificate carries
127.0.0.1). cut_all() resets both sides of every open connection; later connections are
forwarded again. Everything listens on 127.0.0.1 only; the threads are daemons and close() ends
every connection.
"""

import socket
import struct
import threading

CHUNK = 65536


def _reset(sock):
    """Closes with RST rather than FIN, as a dying peer or a middlebox does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class CutProxy:
    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.lock = threading.Lock()
        self.pairs = []
        self.cuts = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                _reset(client)
                continue
            pair = (client, server)
            with self.lock:
                self.pairs.append(pair)
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst, pair), daemon=True).start()

    def _pump(self, src, dst, pair):
        try:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
        except OSError:
            self._drop(pair)

    def _drop(self, pair):
        with self.lock:
            if pair not in self.pairs:
                return
            self.pairs.remove(pair)
        for s in pair:
            _reset(s)

    def open_connections(self):
        with self.lock:
            return len(self.pairs)

    def cut_all(self):
        """Resets every open connection; returns how many there were."""
        with self.lock:
            pairs, self.pairs = self.pairs, []
            self.cuts += len(pairs)
        for pair in pairs:
            for s in pair:
                _reset(s)
        return len(pairs)

    def close(self):
        self.listener.close()
        self.cut_all()
