"""A small SVG writer for the eval report's plots: grouped and stacked horizontal bars.

No plotting library: a report is a few dozen bars, and a dependency the size of matplotlib for
that would be most of the install. Every text is escaped; sizes are in CSS pixels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["PALETTE", "fmt", "grouped_bars", "stacked_bars"]

PALETTE = ("#3b6ea5", "#d08c2f", "#5a9e6f", "#a35d8f", "#8c8c8c", "#c44e52")
_LABEL, _BAR, _GAP, _PLOT = 190, 14, 10, 420


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 12) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-family="sans-serif">{escape(text)}</text>')  # fmt: skip


def _rect(x: float, y: float, w: float, h: float, color: str, title: str) -> str:
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.0):.1f}" height="{h:.1f}" '
            f'fill="{color}"><title>{escape(title)}</title></rect>')  # fmt: skip


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        _text(4, 16, title, size=14), *body, "</svg>",
    ])  # fmt: skip


def fmt(value: float) -> str:
    """Whole numbers and anything from 100 up without decimals, smaller fractions to three
    significant figures (no exponent notation: 0.000123 is still written out)."""
    if value == int(value) or abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}" if abs(value) >= 0.001 else f"{value:.6f}"


_PER_ROW = 4


def _legend(names: Sequence[str], y: float) -> tuple[list[str], float]:
    """Swatches four to a row; returns them and the y below the last row."""
    out = []
    for i, name in enumerate(names):
        x, row_y = _LABEL + (i % _PER_ROW) * 125, y + (i // _PER_ROW) * 18
        color = PALETTE[i % len(PALETTE)]
        out += [_rect(x, row_y - 10, 12, 12, color, name), _text(x + 16, row_y, name)]
    return out, y + ((len(names) - 1) // _PER_ROW + 1) * 18


def grouped_bars(
    title: str, groups: Sequence[str], series: Mapping[str, Sequence[float]], unit: str = ""
) -> str:
    """A bar per series within each group (e.g. each configuration's tokens per work order)."""
    names = list(series)
    top = max((v for values in series.values() for v in values), default=0.0) or 1.0
    body, y = _legend(names, 40)
    for g, group in enumerate(groups):
        body.append(_text(_LABEL - 6, y + _BAR * len(names) / 2 + 4, group, "end"))
        for s, name in enumerate(names):
            value = series[name][g]
            width = _PLOT * value / top
            color = PALETTE[s % len(PALETTE)]
            label = f"{fmt(value)}{unit}"
            body.append(_rect(_LABEL, y, width, _BAR - 2, color, f"{name} {group}: {label}"))
            body.append(_text(_LABEL + width + 4, y + _BAR - 4, label, size=10))
            y += _BAR
        y += _GAP
    return _svg(_LABEL + _PLOT + 80, int(y + 10), title, body)


def stacked_bars(title: str, bars: Mapping[str, Mapping[str, float]], unit: str = "") -> str:
    """A bar per key, split into its parts (e.g. each configuration's tokens by section)."""
    parts = sorted({p for values in bars.values() for p in values})
    top = max((sum(v.values()) for v in bars.values()), default=0.0) or 1.0
    body, y = _legend(parts, 40)
    for name, values in bars.items():
        body.append(_text(_LABEL - 6, y + _BAR, name, "end"))
        x = float(_LABEL)
        for p, part in enumerate(parts):
            width = _PLOT * values.get(part, 0.0) / top
            color = PALETTE[p % len(PALETTE)]
            body.append(
                _rect(
                    x,
                    y,
                    width,
                    _BAR * 1.5,
                    color,
                    f"{name} {part}: {fmt(values.get(part, 0.0))}{unit}",
                )
            )
            x += width
        body.append(_text(x + 4, y + _BAR, f"{fmt(sum(values.values()))}{unit}", size=10))
        y += _BAR * 1.5 + _GAP
    return _svg(_LABEL + _PLOT + 90, int(y + 10), title, body)
