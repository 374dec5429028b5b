"""Parses a Prometheus text exposition (stdin) with the official Python client's
parser, as a Prometheus server would read it, and prints its samples as JSON:
    {"families": {NAME: TYPE}, "samples": [{"name": ..., "labels": {...}, "value": ...}]}
A malformed exposition makes the parser raise: exit 1 with its message.

Usage (tests/all/replicas.rs runs it with the venv tests/lb/setup.sh made):
    curl -s http://127.0.0.1:PORT/metrics | metrics.py
"""

import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    families = {}
    samples = []
    for family in text_string_to_metric_families(sys.stdin.read()):
        families[family.name] = family.type
        for sample in family.samples:
            value = sample.value
            samples.append({
                "name": sample.name,
                "labels": sample.labels,
                "value": None if math.isinf(value) or math.isnan(value) else value,
            })
    print(json.dumps({"families": families, "samples": samples}))


if __name__ == "__main__":
    main()
