#!/usr/bin/env python3
"""A live OTLP/HTTP trace receiver for scripts/bench-proxy's TRACE runs (standard library only).

  otlp_sink.py --port PORT --stats FILE

Takes POST /v1/traces (application/x-protobuf) as a collector does: reads the whole body, answers 200
with an empty ExportTraceServiceResponse (zero bytes is that message's encoding), keeps the connection
alive. Counts export requests and body bytes; writes them as JSON to FILE on SIGTERM and on GET /stats.
It does not decode the spans: what the gateway pays is the same whatever the receiver does with them.
"""
import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATS = {"exports": 0, "bytes": 0}
LOCK = threading.Lock()


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        with LOCK:
            STATS["exports"] += 1
            STATS["bytes"] += n
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        body = json.dumps(STATS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--stats", required=True)
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Sink)

    def stop(*_):
        with open(a.stats, "w") as f:
            json.dump(STATS, f)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
