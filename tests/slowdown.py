"""A TCP proxy in front of the S3 server that answers the first N matching requests with
503 SlowDown (as an overloaded service does) and passes everything else through unchanged,
keeping what the clients sent (`sent()`: every request's head and body, as on the wire)."""

from __future__ import annotations

import socket
import threading

SLOWDOWN = (b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s")
BODY = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
        b"<Message>Please reduce your request rate.</Message></Error>")


class SlowDownProxy:
    def __init__(self, upstream_port: int, throttle: int, match: bytes) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.left, self.match = throttle, match
        self.answered = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._stop = False
        self._sent: list[bytearray] = []  # per connection, what the client sent upstream
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = conn.recv(65536)
            if not data:
                conn.close()
                return
            head += data
        line = head.split(b"\r\n", 1)[0]
        with self.lock:
            refuse = self.left > 0 and self.match in line
            if refuse:
                self.left -= 1
                self.answered += 1
        if refuse:  # a GET carries no body, so the whole request is read
            conn.sendall(SLOWDOWN % (len(BODY), BODY))
            conn.close()
            return
        up = socket.create_connection(self.upstream)
        up.sendall(head)
        kept = bytearray(head)
        with self.lock:
            self._sent.append(kept)
        threading.Thread(target=_pipe, args=(up, conn), daemon=True).start()
        _pipe(conn, up, kept)

    def sent(self) -> bytes:
        """Everything the clients sent through the proxy so far."""
        with self.lock:
            return b"".join(bytes(k) for k in self._sent)

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def _pipe(src: socket.socket, dst: socket.socket, kept: bytearray | None = None) -> None:
    try:
        while data := src.recv(65536):
            if kept is not None:
                kept += data
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
