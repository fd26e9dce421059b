"""The README's "Data quality" table is what ``t.quality()`` reports on the README's own data
(three synthetic days of 100,000 quotes over 500 symbols), and its figure is committed."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

import hfq
from hfq.quality import Rules, symbol_days

REPO = Path(__file__).resolve().parents[2]
DAYS = ["2007-08-01", "2007-08-02", "2007-08-03"]


def _section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("### Data quality")
    return text[start:text.index("\n## ", start)]


def _number(text: str) -> int:
    return int(re.sub(r"[^0-9]", "", text))


def test_the_readme_table_is_the_report_on_the_readme_data() -> None:
    rows = pl.from_arrow(hfq.synth.taq_table(dates=DAYS, rows_per_day=100_000, symbols=500))
    assert isinstance(rows, pl.DataFrame)
    days = symbol_days(rows, Rules())
    section = _section()
    checked = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("check", "---"):
            continue
        names = [n.strip() for n in cells[0].split("/")]
        counts = [_number(c) for c in cells[1].split("/")]
        for name, count in zip(names, counts, strict=True):
            assert days[name].sum() == count, (name, count)
            checked.add(name)
        assert (days[names[0]] > 0).sum() == _number(cells[3]), names[0]
    assert checked == {"missing_price", "nonpositive", "sentinel", "crossed", "locked", "wide",
                       "outside_session", "out_of_order", "duplicates", "gap_minutes",
                       "jumps"}
    clean = days["clean"].sum()
    assert f"here {clean:,} rows, {clean / days['rows'].sum():.1%}" in section


def test_the_readme_shows_the_committed_figure() -> None:
    assert "![quality report](docs/img/quality.png)" in _section()
    assert (REPO / "docs/img/quality.png").read_bytes()[:4] == b"\x89PNG"
