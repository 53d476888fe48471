"""The inspector with a full journal (docs/performance.md, server.md §8): is the page still usable with
10,000 journal entries and 1,000 conversations?

Starts ``mockllm serve`` on a two-step scenario, makes a small run (10 requests, 10 conversations)
and reads everything one poll of the page reads (``/_mockllm/ui/api/``: journal, graph,
conversations, library, verify, one entry's detail), then grows the run to 1,000 conversations and
10,000 entries and reads the same again. It prints, as counts and ratios (no timing is judged):

- whether the newest entry is the first row the page shows (the newest entries visible);
- the live feed the page polls twice a second (``feed``: the rows new since the newest listed, and
  the rows on show looked up by id), for the newest page and for a page far back (``feed (older
  page)``), with how many rows it sent back (all asked about as if still going; ``feed (rows ended)``:
  as the page asks once they have ended): it costs the rows on show, not the journal's size;
- the rows and the bytes of each answer, small run and large run, and their ratio: the page's own
  requests stay bounded when the ratio stays near 1x while the journal grew 100x;
- the seconds one poll took, and the median seconds of the journal's part of a poll, as the page
  polled it before the live feed (the newest fifty listed again) and with the feed, unfiltered and
  filtered by a conversation: for information only.

Usage: ``python bench/inspector_load.py [--conversations 1000] [--per 10]``"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

SCRIPT = """\
scenario "Weather":
    step ask:
        when:
            last user message contains "weather"
        reply:
            text "Which city?"
    step answer:
        when:
            last user message contains "Oslo"
        always
        reply:
            text "Sunny in Oslo."
"""
POLL = ("journal?limit=50", "graph?scenario=Weather", "conversations?limit=50", "library", "verify")


def run(client: httpx.Client, url: str, conversations: int, per: int, start: int) -> None:
    for c in range(start, conversations):
        headers = {"x-mockllm-conversation": f"conversation-{c:05d}"}
        for i in range(per):
            text = "weather?" if i == 0 else ("Oslo" if i % 4 else "nobody scripted this")
            body = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
            client.post(url + "/v1/chat/completions", json=body, headers=headers)


def poll(client: httpx.Client, url: str) -> tuple[dict[str, int], dict[str, int], bool, float]:
    """Bytes and rows of each answer one poll reads, whether the newest entry is shown first, seconds."""
    sizes: dict[str, int] = {}
    rows: dict[str, int] = {}
    began = time.perf_counter()
    newest_first = False
    for path in POLL:
        answer = client.get(url + "/_mockllm/ui/api/" + path)
        answer.raise_for_status()
        sizes[path] = len(answer.content)
        data = answer.json()
        if path.startswith("journal"):
            rows[path] = len(data["entries"])
            newest_first = bool(data["entries"]) and data["entries"][0]["id"] == data["newest"]
            top = data["entries"][0]["id"] if data["entries"] else 0
            detail = client.get(url + f"/_mockllm/ui/api/entry?id={top}")
            sizes["entry"] = len(detail.content)
            feed(client, url, data["entries"], f"after={data['newest']}", "feed", sizes, rows)
            feed(client, url, data["entries"], f"after={data['newest']}", "feed (rows ended)", sizes, rows, False)
            older = client.get(url + f"/_mockllm/ui/api/journal?limit=50&before={max(2, top // 2)}").json()
            feed(client, url, older["entries"], "", "feed (older page)", sizes, rows)
        elif path.startswith("conversations"):
            rows[path] = len(data["conversations"])
    return sizes, rows, newest_first, time.perf_counter() - began


def feed(
    client: httpx.Client,
    url: str,
    shown: list[dict[str, object]],
    after: str,
    name: str,
    sizes: dict[str, int],
    rows: dict[str, int],
    going: bool = True,
) -> None:
    """One poll of the live feed for the rows ``shown``: with ``going``, every row asked about as if
    none had ended (the most a poll looks up); else as the page asks once they have ended."""
    ids = ",".join(str(r["id"]) for r in shown)
    still = ids if going else ""
    answer = client.get(url + f"/_mockllm/ui/api/feed?limit=50&ids={ids}&open={still}&{after}")
    answer.raise_for_status()
    sizes[name] = len(answer.content)
    rows[name] = len(answer.json()["rows"])


def median_seconds(client: httpx.Client, url: str, path: str, times: int = 20) -> float:
    took = []
    for _ in range(times):
        began = time.perf_counter()
        client.get(url + "/_mockllm/ui/api/" + path).raise_for_status()
        took.append(time.perf_counter() - began)
    return statistics.median(took)


def polls(client: httpx.Client, url: str) -> None:
    """The journal's part of one poll: listed again (before the feed) and with the feed, unfiltered and
    filtered by one conversation (a listing looks through the journal for its rows)."""
    top = client.get(url + "/_mockllm/ui/api/journal?limit=50").json()
    ids = ",".join(str(r["id"]) for r in top["entries"])
    after = top["newest"]
    mine = "conversation=conversation-00999"
    for what, listing, live in (
        ("newest fifty", "journal?limit=50", f"feed?limit=50&ids={ids}&open=&after={after}"),
        ("filtered by conversation", f"journal?limit=50&{mine}", f"feed?limit=50&{mine}&ids=&open=&after={after}"),
    ):
        listed, fed = median_seconds(client, url, listing), median_seconds(client, url, live)
        print(f"poll, {what}: listed again {listed * 1000:.1f} ms, live feed {fed * 1000:.1f} ms (median of 20)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--per", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "weather.mockllm"
        script.write_text(SCRIPT, encoding="utf-8")
        argv = [sys.executable, "-m", "mockllm", "serve", str(script), "--port", "0", "--no-auth"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split(" on ", 1)[1].strip()
            with httpx.Client(timeout=60) as client:
                run(client, url, 10, args.per, 0)
                small, _, _, small_s = poll(client, url)
                run(client, url, args.conversations, args.per, 10)
                large, large_rows, newest_first, large_s = poll(client, url)
                count = args.conversations * args.per
                print(f"journal: {count} requests sent, {args.conversations} conversations")
                print(f"newest entry shown first: {'yes' if newest_first else 'NO'}")
                print(f"{'answer':<28}{'small run':>12}{'large run':>12}{'ratio':>8}  rows (large)")
                for name in large:
                    ratio = large[name] / max(1, small[name])
                    shown = large_rows.get(name, "")
                    print(f"{name:<28}{small[name]:>12}{large[name]:>12}{ratio:>7.1f}x  {shown}")
                biggest = max(large.values())
                print(f"largest answer: {biggest} bytes; reading them all took {small_s:.3f}s, then {large_s:.3f}s")
                polls(client, url)
        finally:
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
