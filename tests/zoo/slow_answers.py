"""A correct HTTP/1.1 server that is slow on purpose: one request at a
time, each answered after DELAY_MS. Usage: slow_answers.py PORT DELAY_MS"""

import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        time.sleep(DELAY_MS / 1000)
        body = b"slow but correct\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    PORT, DELAY_MS = int(sys.argv[1]), int(sys.argv[2])
    HTTPServer(("127.0.0.1", PORT), Slow).serve_forever()
