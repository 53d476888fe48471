"""Prometheus metrics at ``GET /_mockllm/metrics`` (server/metrics/metrics.py)."""
