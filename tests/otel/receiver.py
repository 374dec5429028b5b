"""An OTLP/HTTP trace receiver for toolhost's tests: decodes each
ExportTraceServiceRequest (protobuf, optionally gzip) with OpenTelemetry's own
definitions (opentelemetry-proto) and prints every span as one JSON line:
{"service", "instance", "name", "trace_id", "span_id", "parent_span_id", "attributes"}.

Usage: receiver.py   (prints "listening PORT" first; serves on 127.0.0.1 until stdin closes)
"""

import gzip
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

LOCK = threading.Lock()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces" or "protobuf" not in (self.headers.get("content-type") or ""):
            self.send_response(415 if self.path == "/v1/traces" else 404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with LOCK:
            for resource_spans in request.resource_spans:
                resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        line = {
                            "service": resource.get("service.name"),
                            "instance": resource.get("service.instance.id"),
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "attributes": {kv.key: value_of(kv.value) for kv in span.attributes},
                        }
                        print(json.dumps(line), flush=True)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    main()
