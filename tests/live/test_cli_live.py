"""``hfq publish`` and ``hfq tail`` (issue 26 items 1, 3): CSV rows published at a rate, read
back as they arrive.  Oracle: the CSV file itself, read by ``load_csv`` into another table."""

from __future__ import annotations

import json

import hfq
from conftest import canonical
from hfq.cli import main
from hfq.live.feed import publish_csv


def test_publish_a_csv_and_tail_it(tmp_path, capsys):
    path = str(hfq.synth.taq_csv_files(tmp_path / "csv", dates=["2007-08-01"],
                                       rows_per_day=1200, symbols=8)[0])
    root = str(tmp_path / "db")
    db = hfq.connect(root)
    db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    db.create_table("loaded", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    db.load_csv("loaded", path)
    assert main(["--root", root, "--json", "publish", "q", path, "--batch-rows", "250",
                 "--rate", "1000000", "--name", "feed"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["rows"], out["batches"], out["last_batch"]) == (1200, 5, 5)
    assert canonical(hfq.connect(root)["q"].scan().to_arrow()).equals(
        canonical(db["loaded"].to_arrow()))
    assert main(["--root", root, "tail", "q", "--symbols", "IBM", "--start", "sod",
                 "--idle", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ibm = db["loaded"].scan(symbols="IBM").count()
    assert len(lines) == ibm and all(line.startswith("IBM  2007-08-01") for line in lines)
    assert main(["--root", root, "publish", "q", path, "--name", "feed"]) == 0   # again
    assert "published 1,200 rows" in capsys.readouterr().out
    assert hfq.connect(root)["q"].scan().count() == 2400


def test_publish_csv_waits_for_each_batch_at_its_share_of_the_rate(tmp_path):
    """``rate=10`` rows/s, 250-row batches: batch k (k >= 1) is due k * 25 s after the start.
    ``sleep`` is recorded, not slept, so each wait is ``due - elapsed`` with elapsed the real
    time so far (a few seconds; 20 s of slack)."""
    path = str(hfq.synth.taq_csv_files(tmp_path / "csv", dates=["2007-08-01"],
                                       rows_per_day=1000, symbols=4)[0])
    db = hfq.connect(str(tmp_path / "db"))
    t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
    sleeps: list[float] = []
    fed = publish_csv(t, [path], rate=10, batch_rows=250, sleep=sleeps.append)
    assert (fed.rows, fed.batches) == (1000, 4)
    assert len(sleeps) == 3
    for k, wait in enumerate(sleeps, 1):
        assert k * 25 - 20 < wait <= k * 25, (k, sleeps)
