"""The Quality page's charts as SVG geometry, computed here and drawn by the template.

No script draws them (the CSP allows none inline, and none is needed): the server
places every point, line and bar. Colours and strokes are SVG presentation attributes,
not style attributes, so `style-src 'self'` holds. The plotted data goes along as JSON
in the chart's `data-points` attribute.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from tasks.review.quality_series import AccuracyPoint, HistogramBin

WIDTH = 720
HEIGHT = 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 150, 16, 40
PALETTE = ("#1b6ac9", "#c9471b", "#2e8b57", "#8a2be2", "#b8860b", "#d02090", "#008b8b", "#555")


@dataclass(frozen=True)
class PlotPoint:
    """A point placed on the chart."""

    series: str
    month: str
    accuracy: float
    notes: int
    x: float
    y: float


@dataclass(frozen=True)
class Series:
    """One group's line, its colour and its points."""

    name: str
    colour: str
    points: list[PlotPoint]

    @property
    def polyline(self) -> str:
        """The `points` attribute of its polyline."""
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclass(frozen=True)
class Tick:
    """A labelled mark on an axis."""

    label: str
    at: float


@dataclass(frozen=True)
class LineChart:
    """Accuracy over months, one line per group."""

    series: list[Series]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    data_points: str  # JSON


@dataclass(frozen=True)
class Bar:
    """One histogram bar."""

    label: str
    notes: int
    x: float
    y: float
    width: float
    height: float


def line_chart(points: Sequence[AccuracyPoint]) -> LineChart:
    """Place the points: months evenly across, accuracy up from a floor below the lowest."""
    months = sorted({point.month for point in points})
    floor = _floor_of([point.accuracy for point in points])
    inner_w, inner_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    step = inner_w / max(1, len(months) - 1)
    x_of = {
        month: _LEFT + (step * n if len(months) > 1 else inner_w / 2)
        for n, month in enumerate(months)
    }

    def y_of(accuracy: float) -> float:
        return _TOP + inner_h * (1.0 - (accuracy - floor) / (1.0 - floor))

    names = sorted({point.series for point in points})
    series = []
    for n, name in enumerate(names):
        placed = [
            PlotPoint(p.series, p.month, p.accuracy, p.notes, x_of[p.month], y_of(p.accuracy))
            for p in points
            if p.series == name
        ]
        series.append(Series(name, PALETTE[n % len(PALETTE)], placed))
    y_ticks = [Tick(f"{value:.2f}", y_of(value)) for value in _y_values(floor)]
    x_ticks = [Tick(month, x_of[month]) for month in months]
    data = [
        {"series": p.series, "month": p.month, "accuracy": round(p.accuracy, 4), "notes": p.notes}
        for p in points
    ]
    return LineChart(series, x_ticks, y_ticks, json.dumps(data, ensure_ascii=False))


def histogram_bars(bins: Sequence[HistogramBin]) -> list[Bar]:
    """Bars side by side, heights in proportion to the fullest bin."""
    inner_w, inner_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    most = max((b.notes for b in bins), default=0) or 1
    width = inner_w / max(1, len(bins))
    bars = []
    for n, b in enumerate(bins):
        height = inner_h * b.notes / most
        bars.append(
            Bar(b.label, b.notes, _LEFT + n * width, _TOP + inner_h - height, width - 2, height)
        )
    return bars


def _floor_of(values: Sequence[float]) -> float:
    """The chart's lowest accuracy: a step of 0.05 under the lowest point, at most 0.9."""
    lowest = min(values, default=0.9)
    return max(0.0, min(0.9, math.floor(lowest * 20) / 20 - 0.05 if lowest < 0.95 else 0.9))


def _y_values(floor: float) -> list[float]:
    step = 0.02 if floor >= 0.9 else 0.05 if floor >= 0.6 else 0.1
    count = round((1.0 - floor) / step)
    return [round(floor + n * step, 2) for n in range(count + 1)]
