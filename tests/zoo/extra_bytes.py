"""A server with one framing bug, as student servers have it: each answer
is 200 with a correct Content-Length and body, then EXTRA more bytes
(CRLF pairs) before it closes. Usage: extra_bytes.py PORT EXTRA"""

import socket
import sys
import threading
from email.utils import formatdate


def serve(conn):
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        body = b"hello\n"
        head = (
            "HTTP/1.1 200 OK\r\n"
            f"Date: {formatdate(usegmt=True)}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        conn.sendall(head + body + (b"\r\n" * (EXTRA // 2 + 1))[:EXTRA])


if __name__ == "__main__":
    PORT, EXTRA = int(sys.argv[1]), int(sys.argv[2])
    srv = socket.create_server(("127.0.0.1", PORT), backlog=128)
    while True:
        # Its one bug is the extra bytes: a connection reset before it was
        # accepted, or no thread to spare, must not end the server.
        try:
            c, _ = srv.accept()
        except OSError:
            continue
        try:
            threading.Thread(target=serve, args=(c,), daemon=True).start()
        except RuntimeError:
            c.close()
