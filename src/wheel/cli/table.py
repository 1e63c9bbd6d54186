"""Plain-text tables that fit the terminal: fold long cells, never cut a header or an id.

    print("\\n".join(render([Col("name"), Col("schedule", fold=True)], rows, width=80)))

The layout, in order, until the table fits `width` columns:

1. every column at its natural width (its longest cell or header);
2. folding columns (`fold=True`: a name, a schedule, an error) give up width, the
   widest first, down to their longest word; their cells wrap at spaces onto
   continuation lines;
3. a column marked `below=True` (an id a later command needs whole) leaves the row
   and is printed under it, indented, on a line of its own;
4. else the folding columns share what is left, the widest narrowed first, down to
   `FOLD_MIN` characters (never below their header), words too long for them split
   (at a hyphen when there is one).

Whatever still does not fit runs past the edge rather than being cut: a table is
read by people, and a cut value is a wrong value. `width=None` (`--wide`) keeps
every column at its natural width on one line. Cells are data: no markup is read.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

GAP = 2
"""Spaces between two columns."""
FOLD_MIN = 12
"""The narrowest a folding column is made (unless its header is wider)."""
INDENT = 2
"""How far a `below` value is indented under its row."""


@dataclass(frozen=True)
class Col:
    """A column: its header and how it gives way when the table is too wide."""

    header: str
    """The column's name, printed whole on the first line."""
    fold: bool = False
    """Its cells may wrap onto continuation lines."""
    right: bool = False
    """Right-aligned (numbers, durations)."""
    below: bool = False
    """Moved under its row, whole, when the row does not fit (only the last column)."""


def render(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int | None) -> list[str]:
    """The table's lines: a header, a rule, then each row (one line or more)."""
    shown = list(range(len(columns)))
    cells = [[row[i] for row in rows] for i in shown]
    widths = _folded(columns, cells, width, split=False)
    if width is not None and _total(widths) > width and columns[-1].below:
        shown.pop()
        widths = _folded(columns[:-1], cells[:-1], width, split=False)
    if width is not None and _total(widths) > width:
        widths = _folded([columns[i] for i in shown], [cells[i] for i in shown], width, split=True)
    kept = [columns[i] for i in shown]
    lines = [_line([col.header for col in kept], kept, widths), _line(["─" * w for w in widths],
                                                                       kept, widths)]  # fmt: skip
    for row in rows:
        parts = [_wrap(row[i], w) if col.fold else [row[i]]
                 for i, col, w in zip(shown, kept, widths, strict=True)]  # fmt: skip
        for depth in range(max(len(part) for part in parts)):
            lines.append(_line([part[depth] if depth < len(part) else "" for part in parts],
                               kept, widths))  # fmt: skip
        if len(shown) < len(columns) and row[-1]:
            lines.append(" " * INDENT + f"{columns[-1].header} {row[-1]}")
    return lines


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _folded(
    columns: Sequence[Col], cells: Sequence[Sequence[str]], width: int | None, *, split: bool
) -> list[int]:
    """Column widths: folding columns narrowed, the widest first, while the table is wider
    than `width`, down to their longest word or (`split`) down to `FOLD_MIN`."""
    widths = [
        max([len(col.header), *map(len, column)])
        for col, column in zip(columns, cells, strict=True)
    ]
    if width is None:
        return widths
    if split:
        floor = [FOLD_MIN] * len(columns)
    else:
        floor = [max((len(w) for cell in column for w in cell.split()), default=0)
                 for column in cells]  # fmt: skip
    floors = [
        max(len(col.header), min(f, w)) for col, f, w in zip(columns, floor, widths, strict=True)
    ]
    natural = list(widths)
    last = -1
    while _total(widths) > width:
        candidates = [i for i, c in enumerate(columns) if c.fold and widths[i] > floors[i]]
        if not candidates:
            return widths
        last = max(candidates, key=lambda i: widths[i])
        # Down to the next widest (or by the excess), in one step rather than one by one.
        others = [widths[i] for i in candidates if i != last]
        target = max(floors[last], widths[last] - (_total(widths) - width),
                     max(others, default=0))  # fmt: skip
        target = min(target, widths[last] - 1)
        # What the folded cells really take: "2027-03-27 12:00:00Z" folds to 10, not 19.
        widths[last] = max(
            [len(columns[last].header), *(len(line) for cell in cells[last]
                                          for line in _wrap(cell, target))]
        )  # fmt: skip
    # The last fold may have freed more than needed: give it to the widest folded column.
    folded = [i for i, c in enumerate(columns) if c.fold and widths[i] < natural[i]]
    if folded:
        widest = max(folded, key=lambda i: natural[i])
        widths[widest] = min(natural[widest], widths[widest] + width - _total(widths))
    return widths


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width`, broken at spaces; a longer word at a hyphen, else anywhere."""
    lines: list[str] = []
    for line in textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False) or [""]:
        if len(line) <= width:
            lines.append(line)
        else:
            lines.extend(textwrap.wrap(line, width, break_on_hyphens=True))
    return lines


def _line(parts: Sequence[str], columns: Sequence[Col], widths: Sequence[int]) -> str:
    cells = [part.rjust(w) if col.right else part.ljust(w)
             for part, col, w in zip(parts, columns, widths, strict=True)]  # fmt: skip
    return (" " * GAP).join(cells).rstrip()
