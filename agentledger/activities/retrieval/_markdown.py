"""Markdown into passages: one per ``## Heading {#anchor}`` section, with a stable anchor.

The anchor makes ``document#anchor`` a stable source id across revisions, so a citation names the
same clause in every revision and the revision says which wording was seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentledger.domain.canonical import sha256_hex

_TITLE = re.compile(r"^# (?P<title>.+?)\s*$", re.MULTILINE)
_HEADING = re.compile(r"^## (?P<title>.+?)(?: \{#(?P<anchor>[a-z0-9-]+)\})?\s*$", re.MULTILINE)
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class ParsedPassage:
    anchor: str
    title: str
    text: str

    @property
    def content_hash(self) -> str:
        return sha256_hex(self.text)


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    passages: tuple[ParsedPassage, ...]

    @property
    def content_hash(self) -> str:
        return sha256_hex([[p.anchor, p.title, p.text] for p in self.passages])


def slug(title: str) -> str:
    return _SLUG.sub("-", title.lower()).strip("-") or "section"


def parse_markdown(markdown: str, default_title: str = "") -> ParsedDocument:
    """Whitespace is normalised so a re-wrapped paragraph keeps its hash."""
    heading = _TITLE.search(markdown)
    matches = list(_HEADING.finditer(markdown))
    passages, seen = [], set()
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(markdown)
        anchor = match["anchor"] or slug(match["title"])
        if anchor in seen:
            raise ValueError(f"duplicate anchor #{anchor}: anchors must be unique per document")
        seen.add(anchor)
        text = " ".join(markdown[match.end() : end].split())
        passages.append(ParsedPassage(anchor=anchor, title=match["title"].strip(), text=text))
    if not passages:
        raise ValueError("no '## Heading' sections: nothing to load as passages")
    title = heading["title"] if heading else default_title
    return ParsedDocument(title=title, passages=tuple(passages))
