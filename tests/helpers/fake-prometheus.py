#!/usr/bin/env python3
"""fake-prometheus.py ANSWERS PORTFILE [--auth USER:PASS] [--delay SECONDS] [--pad BYTES]: a stand-in for Prometheus's
GET /api/v1/query on 127.0.0.1, for `gpudoctor fleet --prometheus` tests that need answers a
real server would not give (a value out of range, a password in the URL).

ANSWERS is a JSON object: each key is the start of a query (the metric's name), each value the
vector it answers, a list of [labels, value] (the value as Prometheus writes it: a string such
as "8", "-1", "+Inf"). The first key that starts the query answers it; other queries answer an
empty vector. The port it listens on is written to PORTFILE once it does. With --auth, a request
without that user and password (HTTP Basic) is answered 401, and so every query fleet sends.
With --delay, each answer comes SECONDS late (a server that is slow, but within any one query's
timeout). With --pad, each answer starts with BYTES blanks (valid JSON, sent a piece at a time:
an answer larger than fleet reads, without this server holding it).
"""
import base64
import os
import json
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer


def main():
    answers_path, port_file = sys.argv[1], sys.argv[2]
    auth, delay, pad = None, 0.0, 0
    opts = sys.argv[3:]
    for flag, value in zip(opts[::2], opts[1::2]):
        if flag == "--auth":
            auth = "Basic " + base64.b64encode(value.encode()).decode()
        elif flag == "--delay":
            delay = float(value)
        elif flag == "--pad":
            pad = int(value)
    with open(answers_path) as f:
        answers = json.load(f)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            if auth is not None and self.headers.get("Authorization") != auth:
                self.send_response(401)
                self.end_headers()
                return
            if url.path != "/api/v1/query":
                self.send_response(404)
                self.end_headers()
                return
            q = urllib.parse.parse_qs(url.query).get("query", [""])[0]
            result = []
            for prefix, vector in answers.items():
                if q.startswith(prefix):
                    result = [{"metric": labels, "value": [1764669600.0, value]}
                              for labels, value in vector]
                    break
            time.sleep(delay)
            body = json.dumps({"status": "success",
                               "data": {"resultType": "vector", "result": result}}).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(pad + len(body)))
                self.end_headers()
                blanks = b" " * (1 << 20)
                for at in range(0, pad, len(blanks)):
                    self.wfile.write(blanks[:min(len(blanks), pad - at)])
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # fleet gave up waiting (--deadline): what a slow server sees

    server = HTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
