"""Work limits shared by the schema value generator, its validator and its regex sampler, so a
hostile schema cannot hang the server. (The signal that no value can be built is
:class:`mockllm.errors.NoValue`.)"""

from __future__ import annotations

MAX_DEPTH = 48
# Past SOFT_STEPS generation stops trying alternatives (it takes the first value it can build);
# past HARD_STEPS, or when a value grows past MAX_CHARS characters, it gives up. Validation past
# CHECK_STEPS assumes valid.
SOFT_STEPS = 2_000
HARD_STEPS = 20_000
CHECK_STEPS = 200_000
MAX_CHARS = 20_000
