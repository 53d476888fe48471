"""Name-variant matching: finding a tool's name in free text, whatever its spelling.

A name is split into lower-case words at separators (``_``, ``-``, spaces, dots …), at
camelCase humps and at letter/digit boundaries, so ``send_email``, ``sendEmail``, ``SendEmail``,
``send-email`` and ``send email`` all become ``("send", "email")``. Text is split the same way.
Words are compared by a small stem (``emails`` → ``email``, ``searching`` → ``search``), applied
to both sides, so the stem only has to be consistent, not linguistically right.

A text *mentions* a name when either

- the name's words appear consecutively (any casing or separator: ``please sendEmail``,
  ``send-email``, ``Send Email``), or as one run-together word (``sendemail``); or
- every word of the name appears somewhere in the text as a word (``send an email`` →
  ``send_email``). A leading generic verb (``get``, ``fetch``, ``retrieve``, ``lookup``) may be
  left out, provided another word remains: ``what's the weather?`` mentions ``get_weather``.

The position of a mention is the index of the word that completes it (the last word of a
consecutive run, or the latest of the first occurrences of the needed words), so tools can be
ordered as the text names them.
"""

from __future__ import annotations

from mockllm.runtime.values import fast_frozen

OPTIONAL_LEADING_VERBS = frozenset({"get", "fetch", "retrieve", "lookup"})


def _chunks(text: str) -> list[str]:
    """Maximal runs of letters and digits (Unicode-aware)."""
    out: list[str] = []
    cur: list[str] = []
    for ch in text:
        if ch.isalnum():
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def _split_chunk(chunk: str) -> list[str]:
    """Split one alphanumeric run at camelCase humps, acronym ends and letter/digit boundaries."""
    words: list[str] = []
    start = 0
    n = len(chunk)
    for i in range(1, n):
        prev, ch = chunk[i - 1], chunk[i]
        boundary = (
            (prev.islower() and ch.isupper())
            or (prev.isdigit() != ch.isdigit())
            or (prev.isupper() and ch.isupper() and i + 1 < n and chunk[i + 1].islower())
        )
        if boundary:
            words.append(chunk[start:i])
            start = i
    words.append(chunk[start:])
    return [w.lower() for w in words if w]


def split_words(name: str) -> tuple[str, ...]:
    """The lower-case words of an identifier or a piece of text."""
    return tuple(w for chunk in _chunks(name) for w in _split_chunk(chunk))


def stem(word: str) -> str:
    """A crude, consistent stem: plural and verb endings off, a final ``e`` off."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes", "zes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "aeiouls":
            w = w[:-1]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "aeiouls":
            w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


@fast_frozen
class Words:
    """A text split for matching: stemmed words, and the run-together chunks with the index of the
    word each one ends at."""

    stems: tuple[str, ...]
    chunks: tuple[tuple[str, int], ...]


def words_of(text: str) -> Words:
    stems: list[str] = []
    chunks: list[tuple[str, int]] = []
    for chunk in _chunks(text):
        parts = _split_chunk(chunk)
        stems.extend(stem(p) for p in parts)
        chunks.append((chunk.lower(), len(stems) - 1))
    return Words(tuple(stems), tuple(chunks))


def _consecutive(needle: tuple[str, ...], hay: tuple[str, ...]) -> int | None:
    k = len(needle)
    for i in range(len(hay) - k + 1):
        if hay[i : i + k] == needle:
            return i + k - 1
    return None


def _all_words(needle: tuple[str, ...], hay: tuple[str, ...]) -> int | None:
    last = -1
    for w in needle:
        try:
            last = max(last, hay.index(w))
        except ValueError:
            return None
    return last


def mention(name: str, text: Words) -> int | None:
    """Where ``text`` mentions the tool ``name`` (the index of the completing word), or None."""
    words = split_words(name)
    if not words:
        return None
    stems = tuple(stem(w) for w in words)
    found: list[int] = []
    run = _consecutive(stems, text.stems)
    if run is not None:
        found.append(run)
    joined = "".join(words)
    for chunk, end in text.chunks:
        if chunk == joined:
            found.append(end)
            break
    every = _all_words(stems, text.stems)
    if every is not None:
        found.append(every)
    elif len(words) > 1 and words[0] in OPTIONAL_LEADING_VERBS:
        rest = _all_words(stems[1:], text.stems)
        if rest is not None:
            found.append(rest)
    return min(found) if found else None
