"""ffprobe as the judge of audio bytes (Debian's ffmpeg; .ci/run installs it): the codec, the container
and the length it reads, with nothing on stderr."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

RAW = ["-f", "s16le", "-ar", "24000", "-ac", "1"]
#: what ffprobe names each speech format's codec and container
EXPECTED = {
    "mp3": ("mp3", "mp3"),
    "opus": ("opus", "ogg"),
    "aac": ("aac", "aac"),
    "flac": ("flac", "flac"),
    "wav": ("pcm_s16le", "wav"),
    "pcm": ("pcm_s16le", "s16le"),
}


def probe(data: bytes, fmt: str) -> tuple[str, str, float]:
    """The codec, the container and the duration ffprobe reads in ``data`` (``fmt`` pcm: raw s16le)."""
    assert shutil.which("ffprobe"), "ffprobe is missing: install Debian's ffmpeg (.ci/run does)"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"audio.{fmt}"
        path.write_bytes(data)
        args = ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json"]
        out = subprocess.run(
            [*args, *(RAW if fmt == "pcm" else []), str(path)], capture_output=True, text=True, check=True
        )
    assert out.stderr == "", out.stderr
    found = json.loads(out.stdout)
    return found["streams"][0]["codec_name"], found["format"]["format_name"], float(found["format"]["duration"])
