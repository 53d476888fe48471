"""``python -m mockllm``: the same as the ``mockllm`` command."""

from __future__ import annotations

import sys

from mockllm.cli import main

if __name__ == "__main__":
    sys.exit(main())
