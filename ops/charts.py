"""Per-day charts as inline SVG, drawn on the server: no chart library, nothing to load.

Every chart says what it shows to a screen reader (role="img" with a <title> and a <desc>
summing it up), each point or bar carries its own <title> (date and value, shown on
hover), and the page offers the same numbers as a table. Colours come from classes in
app.css (s0…s4), so the Content-Security-Policy needs no inline styles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 56, 14, 14, 30
# An age reads in the largest of these units it fills at least once: a few minutes shown
# as "0.0 d" says nothing.
_AGE_UNITS = ((1.0, "d"), (1 / 24, "h"), (1 / 1440, "min"))


def _age_unit(days: float) -> tuple[float, str]:
    """(days per unit, unit name) for an age of `days`."""
    return next((u for u in _AGE_UNITS if days >= u[0]), _AGE_UNITS[-1])


def fmt(value: float | None, unit: str) -> str:
    """A value as the page shows it: counts whole, rates in %, durations in ms, ages in
    days, hours or minutes."""
    if value is None:
        return "–"
    if unit == "percent":
        return f"{value * 100:.0f}%" if value in (0, 1) else f"{value * 100:.1f}%"
    if unit == "count":  # whole, but for an axis tick halfway to an odd maximum
        return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"
    if unit == "ms":
        if value >= 10_000:
            return f"{value / 1000:.1f} s"
        return f"{value:,.0f} ms" if value == int(value) else f"{value:,.1f} ms"
    if unit == "days":
        if value == 0:
            return "0 d"
        per, name = _age_unit(value)
        value /= per
        return f"{value:.1f} {name}" if value < 10 else f"{value:,.0f} {name}"
    if unit == "ratio":
        return f"{value:.2f}×"
    return f"{value:g}"


def _n(value: float) -> str:
    """A coordinate; format_html escapes its arguments first, so it takes no format spec."""
    return f"{value:.1f}"


def day_label(day: date) -> str:
    return f"{day:%b} {day.day}"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above `value`: round axis maxima."""
    if value <= 0:
        return 1.0
    step = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * step + 1e-9:
            return m * step
    return 10 * step


def _axis(values: list[float], unit: str) -> tuple[float, Callable[[float], str]]:
    """The top of a chart's axis and how its ticks read.

    Ages take one unit for every tick, the one their largest value reads in, and a round
    maximum in that unit, so the ticks of a few minutes' ages are 0, 2.5 and 5 min.
    """
    if unit == "percent":
        return 1.0, lambda tick: fmt(tick, unit)
    if unit == "days":
        per, name = _age_unit(max(values))
        return nice_ceiling(max(values) / per) * per, lambda tick: f"{tick / per:g} {name}"
    return nice_ceiling(max(values)), lambda tick: fmt(tick, unit)


@dataclass(frozen=True)
class Line:
    label: str
    values: list[float | None]


@dataclass(frozen=True)
class Chart:
    """A chart and its numbers; `empty` when there is nothing to draw (no axes then)."""

    key: str
    title: str
    definition: str
    unit: str
    days: tuple[date, ...]
    lines: tuple[Line, ...]
    svg: SafeString
    empty: bool

    @property
    def rows(self) -> list[tuple[date, list[str]]]:
        return [
            (day, [fmt(line.values[i], self.unit) for line in self.lines])
            for i, day in enumerate(self.days)
        ]

    @property
    def legend(self) -> list[tuple[int, str]]:
        return list(enumerate(line.label for line in self.lines))


def is_empty(lines: list[Line], unit: str) -> bool:
    """No value at all; for counts, nothing but zeros (a rate of 0% is still a value)."""
    values = [v for line in lines for v in line.values if v is not None]
    return not values or (unit == "count" and not any(values))


def chart(
    key: str,
    title: str,
    days: tuple[date, ...],
    lines: list[Line],
    *,
    unit: str,
    bars: bool = False,
    definition: str = "",
) -> Chart:
    empty = is_empty(lines, unit)
    svg = SafeString("") if empty else _svg(key, title, days, lines, unit, bars)
    return Chart(key, title, definition, unit, days, tuple(lines), svg, empty)


def _describe(days: tuple[date, ...], lines: list[Line], unit: str) -> str:
    parts = [f"Daily, {days[0]:%Y-%m-%d} to {days[-1]:%Y-%m-%d}."]
    for line in lines:
        known = [(v, d) for v, d in zip(line.values, days, strict=True) if v is not None]
        if not known:
            parts.append(f"{line.label}: no values.")
            continue
        top, top_day = max(known, key=lambda p: p[0])
        parts.append(
            f"{line.label}: latest {fmt(known[-1][0], unit)} on {known[-1][1]:%Y-%m-%d}, "
            f"highest {fmt(top, unit)} on {top_day:%Y-%m-%d}."
        )
    return " ".join(parts)


@dataclass(frozen=True)
class _Frame:
    """Where a chart's days and values fall in the SVG."""

    n: int  # days
    top: float  # the value at the top of the plot

    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM

    def x(self, i: int) -> float:
        return LEFT + self.plot_w * (i + 0.5) / self.n

    def y(self, v: float) -> float:
        return TOP + self.plot_h * (1 - v / self.top)


def _svg(
    key: str, title: str, days: tuple[date, ...], lines: list[Line], unit: str, bars: bool
) -> SafeString:
    values = [v for line in lines for v in line.values if v is not None]
    top, tick_label = _axis(values, unit)
    frame = _Frame(len(days), top)
    out = [
        format_html(
            '<svg class="chart" viewBox="0 0 {} {}" width="100%" role="img" '
            'aria-labelledby="{}-t {}-d" data-testid="chart-{}">'
            '<title id="{}-t">{}</title><desc id="{}-d">{}</desc>',
            WIDTH,
            HEIGHT,
            key,
            key,
            key,
            key,
            title,
            key,
            _describe(days, lines, unit),
        ),
        *_axes(frame, days, tick_label),
    ]
    for k, line in enumerate(lines):
        tips = [
            None if v is None else f"{line.label}, {d:%Y-%m-%d}: {fmt(v, unit)}"
            for v, d in zip(line.values, days, strict=True)
        ]
        draw = _bars(frame, k, len(lines)) if bars else _polyline(frame, k)
        out.extend(draw(line.values, tips))
    out.append(SafeString("</svg>"))
    # Every piece was built by format_html, so joining them escapes nothing twice.
    return format_html_join("", "{}", ((piece,) for piece in out))


def _axes(
    frame: _Frame, days: tuple[date, ...], tick_label: Callable[[float], str]
) -> list[SafeString]:
    """Three grid lines with their values, and the first, middle and last day."""
    out = []
    for tick in (0, frame.top / 2, frame.top):
        out.append(
            format_html(
                '<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/>'
                '<text class="axis" x="{}" y="{}" text-anchor="end">{}</text>',
                LEFT,
                WIDTH - RIGHT,
                _n(frame.y(tick)),
                _n(frame.y(tick)),
                LEFT - 6,
                _n(frame.y(tick) + 4),
                tick_label(tick),
            )
        )
    n = frame.n
    for i in sorted({0, n // 2, n - 1}):
        anchor = "start" if i == 0 and n > 1 else "end" if i == n - 1 and n > 1 else "middle"
        # The end labels sit flush with the plot's edges, so a long date stays inside.
        edge = LEFT if i == 0 else WIDTH - RIGHT if i == n - 1 else frame.x(i)
        out.append(
            format_html(
                '<text class="axis" x="{}" y="{}" text-anchor="{}">{}</text>',
                _n(frame.x(i) if n == 1 else edge),
                HEIGHT - 8,
                anchor,
                day_label(days[i]),
            )
        )
    return out


def _bars(frame: _Frame, k: int, count: int):
    """Series `k` of `count` as bars side by side in each day's slot."""
    width = max(frame.plot_w / frame.n * 0.7 / count, 1.0)

    def draw(values: list[float | None], tips: list[str | None]) -> list[SafeString]:
        out = []
        for i, v in enumerate(values):
            if not v:  # a zero-height bar is nothing to hover; the table has the 0
                continue
            out.append(
                format_html(
                    '<rect class="bar s{}" x="{}" y="{}" width="{}" '
                    'height="{}"><title>{}</title></rect>',
                    k,
                    _n(frame.x(i) - width * count / 2 + k * width),
                    _n(frame.y(v)),
                    _n(width),
                    _n(max(frame.y(0) - frame.y(v), 0.0)),
                    tips[i],
                )
            )
        return out

    return draw


def _polyline(frame: _Frame, k: int):
    """Series `k` as a line broken where a day has no value, with a dot per value."""

    def draw(values: list[float | None], tips: list[str | None]) -> list[SafeString]:
        segment: list[str] = []
        segments = [segment]
        for i, v in enumerate(values):
            if v is None:
                segment = []
                segments.append(segment)
            else:
                segment.append(f"{frame.x(i):.1f},{frame.y(v):.1f}")
        out = [
            format_html('<polyline class="line s{}" points="{}"/>', k, " ".join(points))
            for points in segments
            if len(points) > 1
        ]
        for i, v in enumerate(values):
            if v is not None:
                out.append(
                    format_html(
                        '<circle class="dot s{}" cx="{}" cy="{}" r="3"><title>{}</title></circle>',
                        k,
                        _n(frame.x(i)),
                        _n(frame.y(v)),
                        tips[i],
                    )
                )
        return out

    return draw


def sparkline(values: list[float | None], label: str, unit: str) -> SafeString:
    """A small trend for a table cell; its label states the latest value and the range."""
    known = [v for v in values if v is not None]
    if not known or (unit == "count" and not any(known)):
        return format_html('<span class="muted" title="{}">–</span>', f"{label}: no data")
    w, h, pad = 80, 24, 3
    top = max(known) or 1.0
    n = len(values)
    points = [
        f"{pad + (w - 2 * pad) * (i / max(n - 1, 1)):.1f},{h - pad - (h - 2 * pad) * v / top:.1f}"
        for i, v in enumerate(values)
        if v is not None
    ]
    said = (
        f"{label}: latest {fmt(known[-1], unit)}, lowest {fmt(min(known), unit)}, "
        f"highest {fmt(max(known), unit)}"
    )
    return format_html(
        '<svg class="spark" viewBox="0 0 {} {}" width="{}" height="{}" role="img" '
        'aria-label="{}"><title>{}</title><polyline class="line s0" points="{}"/></svg>',
        w,
        h,
        w,
        h,
        said,
        said,
        " ".join(points) if len(points) > 1 else f"{points[0]} {points[0]}",
    )


__all__ = ["Chart", "Line", "chart", "fmt", "sparkline"]
