"""Server memory over a run of large unmatched requests, then after a reset (issue 12: 2,000 unmatched
requests with 200 KB bodies took RSS from 36 to 439 MB, and a reset released none of it).

Starts ``mockllm serve`` on a script nothing matches, sends N unmatched requests with 200 KB bodies,
reads the whole journal page by page, resets, and prints the server's RSS at each point (from
/proc, Linux only).

Usage: ``python bench/journal_memory.py [--requests 2000] [--body-kb 200]``"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

NEVER = (
    'scenario "s":\n    step a:\n        when:\n            model is "never"\n        reply:\n            text "x"\n'
)


def rss_mb(pid: int) -> float:
    found = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
    return int(found.group(1)) / 1024 if found else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--body-kb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "never.mockllm"
        script.write_text(NEVER, encoding="utf-8")
        argv = [sys.executable, "-m", "mockllm", "serve", str(script), "--port", "0", "--no-auth"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            found = re.search(r"(http://\S+)", proc.stdout.readline())
            if found is None:
                print("the server printed no listening line", file=sys.stderr)
                return 1
            with httpx.Client(base_url=found.group(1), timeout=60) as client:
                client.get("/_mockllm/health")
                start = rss_mb(proc.pid)
                big = "x" * (args.body_kb * 1000)
                for i in range(args.requests):
                    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": big + str(i)}]}
                    client.post("/v1/chat/completions", json=body)
                after_run = rss_mb(proc.pid)
                after, kept = 0, 0
                while True:
                    page = client.get("/_mockllm/requests", params={"limit": 1000, "after": after})
                    kept += len(page.json())
                    if "x-mockllm-next-after" not in page.headers:
                        break
                    after = int(page.headers["x-mockllm-next-after"])
                after_read = rss_mb(proc.pid)
                client.post("/_mockllm/reset")
                time.sleep(0.5)
                after_reset = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print("| requests × body | RSS at start | after the run | after reading the journal | after reset | entries kept |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(
        f"| {args.requests:,} × {args.body_kb} KB | {start:.0f} MB | {after_run:.0f} MB | {after_read:.0f} MB | "
        f"{after_reset:.0f} MB | {kept:,} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
