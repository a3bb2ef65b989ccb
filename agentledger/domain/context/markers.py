"""The ``<data>`` markers that fence untrusted text, and the one function that neutralises
look-alikes of them inside that text.

A model reads markers loosely: ``</DATA>``, ``</ data >``, ``＜/ｄａｔａ>``, ``<\u200b/data>`` or a
Cyrillic ``а`` may all read as the runtime's own close. So detection folds each character
(NFKC, case, a few confusables), skips whitespace and invisible characters anywhere in the tag,
and matches on the name's prefix: anything that could be read as ``<data`` or ``</data`` is a
marker. Neutralising escapes its ``<`` as ``&lt;``, which is no look-alike, so the result holds
none, and text that holds none passes through unchanged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

ESCAPED_OPEN = "&lt;"

# Look-alikes NFKC does not fold, keyed by their case-folded form.
_CONFUSABLES: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys("‹〈⟨˂ᐸ❬❮❰⧼", "<"),
        **dict.fromkeys("⁄∕⧸╱", "/"),
        **dict.fromkeys("ԁꓒ", "d"),
        **dict.fromkeys("аɑα", "a"),
        **dict.fromkeys("тτ", "t"),
    }
)
_OPENERS = "<\ufe64\uff1c" + "".join(k for k, v in _CONFUSABLES.items() if v == "<")
_OPENER = re.compile(f"[{re.escape(_OPENERS)}]")
_INVISIBLE = frozenset({"Cc", "Cf", "Mn", "Me", "Zl", "Zp", "Zs"})
_SKIP = "\x00"  # the fold of whitespace and invisible characters


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    if char.isspace() or unicodedata.category(char) in _INVISIBLE:
        return _SKIP
    folded = unicodedata.normalize("NFKC", char).casefold()
    return _CONFUSABLES.get(folded, folded)


def _skip(text: str, i: int) -> int:
    while i < len(text) and _fold(text[i]) == _SKIP:
        i += 1
    return i


def _is_marker(text: str, start: int) -> bool:
    """Whether the opener at ``start`` begins something that reads as ``<data`` or ``</data``."""
    i = _skip(text, start + 1)
    if i < len(text) and _fold(text[i]) == "/":
        i = _skip(text, i + 1)
    for letter in "data":
        if i >= len(text) or _fold(text[i]) != letter:
            return False
        i = _skip(text, i + 1)
    return True


def marker_starts(text: str) -> list[int]:
    """Where every marker, or anything a model could read as one, begins in ``text``."""
    return [m.start() for m in _OPENER.finditer(text) if _is_marker(text, m.start())]


def holds_opener(text: str) -> bool:
    """Whether ``text`` holds any character a marker could open with. Without one it holds no
    marker, so ``neutralise`` would return it unchanged; an encoder never escapes an opener, so
    this also answers for every string inside a value encoded as JSON."""
    return _OPENER.search(text) is not None


def neutralise(text: str) -> str:
    """``text`` with every marker look-alike's opener escaped; unchanged if it holds none."""
    starts = marker_starts(text)
    if not starts:
        return text
    pieces, last = [], 0
    for start in starts:
        pieces += [text[last:start], ESCAPED_OPEN]
        last = start + 1
    return "".join([*pieces, text[last:]])


def neutralise_json(value: object) -> object:
    """Every string in a JSON value, keys included, neutralised before it is encoded: an
    encoder's escapes (``\\n``, ``\\u200b``) would otherwise hide a look-alike from the scan."""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, list):
        return [neutralise_json(v) for v in value]
    if isinstance(value, dict):
        # Two keys that differ only by a neutralised look-alike merge; both came from the
        # same untrusted object, and the full value stays in the user view and the ledger.
        return {neutralise(k): neutralise_json(v) for k, v in value.items()}
    return value
