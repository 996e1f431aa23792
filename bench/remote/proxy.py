"""A loopback HTTP proxy adding latency to every request, and counting them.

    python proxy.py LISTEN_PORT UPSTREAM_PORT DELAY_MS

Each request gets its own upstream connection (`Connection: close` both
ways), is held DELAY_MS before it is forwarded (a distant object store),
and is counted with the bytes of its answer. `GET /__proxy/stats` answers
{"requests": n, "bytes": b} and `POST /__proxy/reset` zeroes them (neither
is counted). The benchmark (run.py) starts it in a process of its own, so
that relaying never competes with the measured client for a Python lock.
"""

import json
import socket
import socketserver
import sys
import threading
import time

UPSTREAM = int(sys.argv[2])
DELAY = float(sys.argv[3]) / 1000.0
lock = threading.Lock()
stats = {"requests": 0, "bytes": 0}
stats_in_flight = [0]


def read_request(conn):
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None, None
        buf += data
    end = buf.index(b"\r\n\r\n") + 4
    head, body = buf[:end].decode("latin-1"), buf[end:]
    length = 0
    for line in head.split("\r\n"):
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    while len(body) < length:
        data = conn.recv(65536)
        if not data:
            return None, None
        body += data
    return head, body


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        head, body = read_request(self.request)
        if head is None:
            return
        line = head.split("\r\n", 1)[0]
        if " /__proxy/" in line:
            # A request's count lands once its upstream closes, which may
            # be after the client has its answer: wait for those in flight.
            for _ in range(2000):
                with lock:
                    if stats_in_flight[0] == 0:
                        break
                time.sleep(0.001)
            with lock:
                if "/__proxy/reset" in line:
                    stats.update(requests=0, bytes=0)
                out = json.dumps(stats).encode()
            self.request.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(out), out)
            )
            return
        with lock:
            stats_in_flight[0] += 1
        try:
            self.relay(head, body)
        finally:
            with lock:
                stats_in_flight[0] -= 1

    def relay(self, head, body):
        time.sleep(DELAY)
        lines = [l for l in head.split("\r\n") if l and not l.lower().startswith("connection:")]
        upstream = socket.create_connection(("127.0.0.1", UPSTREAM))
        upstream.sendall(("\r\n".join(lines) + "\r\nConnection: close\r\n\r\n").encode("latin-1") + body)
        n = 0
        while True:
            data = upstream.recv(1 << 20)
            if not data:
                break
            n += len(data)
            self.request.sendall(data)
        upstream.close()
        with lock:
            stats["requests"] += 1
            stats["bytes"] += n


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
