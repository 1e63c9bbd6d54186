"""Durations as people read them: "2.5 ms", "840 ms", "25.7 s", "3 min 12 s", "2 h 5 min".

The unit grows with the value, so a figure has at most three significant digits
and never reads as "25702.5 ms"; the sign is kept ("-3 ms": early).
"""

from __future__ import annotations


def readable(seconds: float) -> str:
    """`seconds` in the largest unit that keeps the figure short."""
    sign = "-" if seconds < 0 else ""
    value = abs(seconds)
    if value < 0.01:
        return f"{sign}{value * 1000:.1f} ms"
    if value < 1:
        return f"{sign}{value * 1000:.0f} ms"
    if value < 59.95:
        return f"{sign}{value:.1f} s"
    whole = round(value)
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{sign}{minutes} min {rest} s" if rest else f"{sign}{minutes} min"
    if whole < 86_400:
        hours, rest = divmod(whole, 3600)
        minutes = rest // 60
        return f"{sign}{hours} h {minutes} min" if minutes else f"{sign}{hours} h"
    days, rest = divmod(whole, 86_400)
    hours = rest // 3600
    return f"{sign}{days} d {hours} h" if hours else f"{sign}{days} d"
