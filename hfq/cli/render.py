"""What the commands print: tables sized to the terminal (with rich when installed, plain
columns otherwise), strict JSON, sizes in decimal units, cells of any value."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["Grid", "cell", "columns_that_fit", "emit_json", "grid", "json_on_stdout", "say",
           "show", "size", "width"]

_json_out: ContextVar[TextIO | None] = ContextVar("hfq_cli_json_out", default=None)


@contextlib.contextmanager
def json_on_stdout() -> Iterator[None]:
    """Inside: :func:`emit_json` alone writes on stdout; whatever else is printed there --
    Ray's log lines (a node marked dead, a worker's output), another library's -- goes to
    stderr, so ``--json`` output stays one JSON document."""
    token = _json_out.set(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _json_out.reset(token)


def emit_json(value: Any) -> None:
    """Strict JSON on stdout (NaN and infinities, which JSON lacks, as null)."""
    print(json.dumps(_finite(value), indent=2, default=_jsonable, allow_nan=False),
          file=_json_out.get() or sys.stdout)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "item"):   # numpy scalars
        return value.item()
    return str(value)


@dataclass
class Grid:
    """A table to print: headers, rows of text, the right-aligned columns."""

    headers: list[str]
    rows: list[list[str]]
    right: set[str] = field(default_factory=set)
    show_header: bool = True


def grid(headers: Sequence[str], rows: Iterable[Sequence[Any]], *,
         right: Iterable[str] = (), show_header: bool = True) -> Grid:
    """A :class:`Grid` of ``rows`` (each cell as text)."""
    return Grid(list(headers), [[str(x) for x in row] for row in rows], set(right),
                show_header)


def show(*items: str | Grid) -> None:
    """Print lines and tables on stdout with rich, cells never wrapped (a table too wide for
    the terminal cuts cells with an ellipsis); without rich installed, as plain columns."""
    try:
        text = _rich_text(items)
    except ImportError:
        text = "\n".join(item if isinstance(item, str) else _plain(item) for item in items)
    print("\n".join(line.rstrip() for line in text.splitlines()))


def _rich_text(items: Sequence[str | Grid]) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    # the terminal's width, or 200 columns when stdout is not a terminal
    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 200,
                      soft_wrap=False, highlight=False, emoji=False, markup=False)
    rendered: list[Any] = []
    for item in items:
        if isinstance(item, str):
            rendered.append(item)
            continue
        widths = _fit(item, console.width)
        console.width = max(console.width, sum(widths) + 3 * (len(widths) - 1))
        table = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                          show_header=item.show_header)
        for name, w in zip(item.headers, widths):
            table.add_column(name, no_wrap=True, width=w, overflow="ellipsis",
                             justify="right" if name in item.right else "left")
        for row in item.rows:
            table.add_row(*row)
        rendered.append(table)
    with console.capture() as captured:
        for thing in rendered:
            console.print(thing)
    return captured.get()


def _fit(g: Grid, width: int) -> list[int]:
    """Column widths for ``width`` characters: numbers and the first column in full; the
    other text columns share what is left (each at least 12 characters, then cut with an
    ellipsis: never folded, never dropped); the total may exceed ``width`` when it must."""
    full = [max([len(h)] + [len(row[i]) for row in g.rows]) for i, h in enumerate(g.headers)]
    give = [i for i, h in enumerate(g.headers) if i > 0 and h not in g.right]
    left = width - 3 * (len(full) - 1) - sum(w for i, w in enumerate(full) if i not in give)
    out = list(full)
    for n, i in enumerate(sorted(give, key=lambda k: full[k])):
        share = left // (len(give) - n)
        out[i] = min(full[i], max(min(full[i], 12), share))
        left -= out[i]
    return out


def _plain(g: Grid) -> str:
    rows = ([g.headers] if g.show_header else []) + g.rows
    widths = [max([len(r[i]) for r in rows] or [0]) for i in range(len(g.headers))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if h in g.right else c.ljust(w)
                 for c, w, h in zip(row, widths, g.headers)]
        lines.append("   ".join(cells))
    if g.show_header:
        lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def size(n: int | float) -> str:
    """Bytes in decimal units: 1.2 MB."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{value} TB"   # pragma: no cover


def say(args: argparse.Namespace, text: str) -> None:
    """Human text: stdout, or stderr with --json (stdout is for the JSON)."""
    print(text, file=sys.stderr if args.json else sys.stdout)


def cell(value: Any) -> str:
    """One value as a table cell: ``null``, ISO dates and times, else ``str``."""
    if value is None:
        return "null"
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    return str(value)


def columns_that_fit(g: Grid, width: int) -> int:
    """How many leading columns fit in ``width`` characters (at least one)."""
    used = -3
    for i, name in enumerate(g.headers):
        used += 3 + max([len(name)] + [len(row[i]) for row in g.rows])
        if used > width and i > 0:
            return i
    return len(g.headers)


def width() -> int:
    """The terminal's width, or 200 columns when stdout is not a terminal."""
    return shutil.get_terminal_size((200, 24)).columns if sys.stdout.isatty() else 200
