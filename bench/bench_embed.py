"""How fast the default embedder answers: vectors per second for a batch of 100 short texts.

Measures, in this process:

- embedder: ``embed(text, 1536)`` over the batch (features, hashing, a dense float32 list);
- server: ``POST /v1/embeddings`` with the batch (model ``text-embedding-3-small``, 1536 dimensions)
  to a real mockllm server on a loopback port, float and base64 -- parse, match, embed, JSON or base64
  encoding and the HTTP round trip, one request at a time.

Each text of the batch is distinct (a repeated text would only measure the feature cache), but the
vocabulary repeats as real documents' does. The best of ``--repeat`` runs is shown.

Usage: ``python bench/bench_embed.py [--repeat R] [--seconds S]``. The last line of its output is
``vectors/s: EMBEDDER FLOAT BASE64`` for ``bench/run.py`` (row 8)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

BATCH = 100
DIMENSIONS = 1536
_WORDS = (
    "weather invoice refund password account order shipping delivery Paris Berlin today total "
    "reset security settings monthly report customer support ticket payment card balance"
).split()


def batch(seed: int = 0) -> list[str]:
    """100 short texts (5 to 9 words), distinct, deterministic."""
    out = []
    for i in range(BATCH):
        k = 5 + (i + seed) % 5
        words = [_WORDS[(i * 7 + j * 3 + seed) % len(_WORDS)] for j in range(k)]
        out.append(f"{' '.join(words)} #{seed}-{i}")
    return out


def rate(run: Callable[[list[str]], object], seconds: float, repeat: int) -> float:
    """The best vectors/s over ``repeat`` timed windows of about ``seconds`` each."""
    best = 0.0
    seed = 1
    for _ in range(repeat):
        done = 0
        start = time.perf_counter()
        while True:
            run(batch(seed))
            seed += 1
            done += BATCH
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = max(best, done / elapsed)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()

    import httpx

    from mockllm.runtime.embed.embedder import embed
    from mockllm.server.background import BackgroundServer

    embedder = rate(lambda texts: [embed(t, DIMENSIONS) for t in texts], args.seconds, args.repeat)
    with BackgroundServer(None) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        headers = {"authorization": "Bearer bench"}

        def post(encoding: str) -> Callable[[list[str]], object]:
            def run(texts: list[str]) -> object:
                body = {"model": "text-embedding-3-small", "input": texts, "encoding_format": encoding}
                reply = client.post("/v1/embeddings", json=body, headers=headers)
                reply.raise_for_status()
                return reply.content

            return run

        floats = rate(post("float"), args.seconds, args.repeat)
        b64 = rate(post("base64"), args.seconds, args.repeat)
    print(f"| default embedder, in-process | {embedder:,.0f} vectors/s |")
    print(f"| POST /v1/embeddings, float | {floats:,.0f} vectors/s |")
    print(f"| POST /v1/embeddings, base64 | {b64:,.0f} vectors/s |")
    print(f"vectors/s: {embedder:.0f} {floats:.0f} {b64:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
