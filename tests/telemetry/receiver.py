"""A test OTLP/HTTP receiver: decodes each export with the official
opentelemetry-proto messages and writes what it got as JSON lines.

    python receiver.py OUT [hang]

Listens on 127.0.0.1 (a free port, printed on the first line of stdout),
takes POST /v1/traces and /v1/metrics (application/x-protobuf), and appends
to OUT one line per span ({"kind": "span", "name", "trace_id", "span_id",
"parent_span_id", "start", "end", "attributes", "resource"}) and per metric
data point ({"kind": "metric", "name", "value", "attributes"}). With `hang`
it accepts each connection and never answers: a collector that is stuck.
"""

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]
HANG = len(sys.argv) > 2 and sys.argv[2] == "hang"
LOCK = threading.Lock()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes(pairs):
    return {pair.key: value_of(pair.value) for pair in pairs}


def write(lines):
    with LOCK, open(OUT, "a", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line) + "\n")


def spans(body):
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    lines = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                lines.append(
                    {
                        "kind": "span",
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "resource": resource,
                    }
                )
    write(lines)
    return ExportTraceServiceResponse().SerializeToString()


def metrics(body):
    request = ExportMetricsServiceRequest()
    request.ParseFromString(body)
    lines = []
    for resource_metrics in request.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                data = metric.WhichOneof("data")
                for point in getattr(metric, data).data_points:
                    value = point.as_int if point.WhichOneof("value") == "as_int" else point.as_double
                    lines.append(
                        {
                            "kind": "metric",
                            "name": metric.name,
                            "value": value,
                            "attributes": attributes(point.attributes),
                        }
                    )
    write(lines)
    return ExportMetricsServiceResponse().SerializeToString()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if HANG:
            time.sleep(3600)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        assert self.headers.get("Content-Type") == "application/x-protobuf", self.headers
        if self.path == "/v1/traces":
            answer = spans(body)
        elif self.path == "/v1/metrics":
            answer = metrics(body)
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
