"""What ``GET /_mockllm/metrics`` reports (server/metrics/routes.py, with the admin API's access rules): requests by
provider, operation, status and whether a step matched; streams cut short (a scripted disconnect or
stream error, or a client that left); a latency histogram; conversations alive. Written by hand in
Prometheus's text format 0.0.4 (a few counters need no client library, so ``pip install mockllm``
stays lean); the tests read it back with ``prometheus_client``'s parser.

Counts are this process's (with ``--workers N`` each worker counts its own, as Prometheus expects
of several processes behind one port)."""

from __future__ import annotations

import bisect
from collections import Counter

from mockllm.runtime.engine.journal import Delivery

__all__ = ["BUCKETS", "MEDIA_TYPE", "Metrics"]

#: latency histogram bounds, in seconds (from arrival to the answer's last byte)
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """The counts; :meth:`observe` is called once per answered request (no await, no lock: one loop)."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, str, str]] = Counter()
        self.cuts: Counter[tuple[str, str]] = Counter()
        self.buckets = [0] * (len(BUCKETS) + 1)  # the last: above every bound
        self.latency_sum = 0.0
        self.latency_count = 0

    def observe(self, provider: str, operation: str, delivery: Delivery, matched: bool, seconds: float) -> None:
        self.requests[(provider, operation, str(delivery.status), "true" if matched else "false")] += 1
        note = delivery.note or ""
        if note.startswith(("disconnect", "stream error")) or (delivery.client_gone and "chunks" in note):
            self.cuts[(provider, "client_left" if delivery.client_gone else note.split(" ", 1)[0])] += 1
        self.buckets[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.latency_sum += seconds
        self.latency_count += 1

    def rejected(self, provider: str, operation: str, status: int) -> None:
        """A request refused before the engine saw it (credentials, a malformed body)."""
        self.requests[(provider, operation, str(status), "false")] += 1

    def text(self, conversations: int) -> str:
        out = [
            "# HELP mockllm_requests_total Requests answered, by provider, operation, status and step matched.",
            "# TYPE mockllm_requests_total counter",
        ]
        for (provider, operation, status, matched), n in sorted(self.requests.items()):
            labels = f'provider="{provider}",operation="{operation}",status="{status}",matched="{matched}"'
            out.append(f"mockllm_requests_total{{{labels}}} {n}")
        out += [
            "# HELP mockllm_stream_cuts_total Answers cut short: a scripted cut or stream error, or a client gone.",
            "# TYPE mockllm_stream_cuts_total counter",
        ]
        for (provider, reason), n in sorted(self.cuts.items()):
            out.append(f'mockllm_stream_cuts_total{{provider="{provider}",reason="{reason}"}} {n}')
        out += [
            "# HELP mockllm_request_duration_seconds Time from a request's arrival to the end of its answer.",
            "# TYPE mockllm_request_duration_seconds histogram",
        ]
        running = 0
        for bound, n in zip((*BUCKETS, float("inf")), self.buckets, strict=True):
            running += n
            le = "+Inf" if bound == float("inf") else repr(bound)
            out.append(f'mockllm_request_duration_seconds_bucket{{le="{le}"}} {running}')
        out.append(f"mockllm_request_duration_seconds_sum {self.latency_sum!r}")
        out.append(f"mockllm_request_duration_seconds_count {self.latency_count}")
        out += [
            "# HELP mockllm_conversations Conversations alive (kept until reset, evicted or idle too long).",
            "# TYPE mockllm_conversations gauge",
            f"mockllm_conversations {conversations}",
        ]
        return "\n".join(out) + "\n"
