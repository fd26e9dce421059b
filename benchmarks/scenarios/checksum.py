"""What checksummed reads cost: a day read with verification vs the same read without it.

    python benchmarks/scenarios/checksum.py [--rows 3000000] [--repeats 7] [--codec zstd ...]

Every read of hfq verifies the bytes it decodes (the frame and the record batches it reads,
CRC-32; :mod:`hfq.storage.fragment`).  This measures, on one embedded database and one day of
synthetic TAQ quotes, in alternating order after a warm-up (page cache warm):

* ``day``     -- ``scan(dates=day).to_arrow()``, every column (the issue's "day read");
* ``columns`` -- the same day, two columns (verification still covers whole batches);
* ``symbol``  -- one symbol of the day (a point read: only the batches it touches).

"without" replaces the verification with a no-op in this process -- the code path is otherwise
the same.  On a busy machine the difference of two medians is noisy (it can come out negative),
so ``check`` also times the verification alone -- every batch of the day's files checked as a
whole-day read checks them -- and ``check/read`` divides it by the read without verification.
The issue's bound: verification costs at most 10% of a day read.

A batch's CRC-32 covers all of its columns (``hfq.catalog.records.BatchStats.crc32``), so a
read of two columns still checks every column's bytes: for uncompressed files, where reading a
column is nearly free (memory-mapped, zero copy), that costs more than the bound.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

DAY = "2007-08-01"


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure_codec(root: str, rows: int, codec: str, repeats: int) -> list[dict[str, Any]]:
    """Medians (seconds) of each read with and without verification, for one codec."""
    import hfq
    from hfq.storage import fragment
    db = hfq.connect(os.path.join(root, codec), compression=codec)
    t = db.create_table("quotes", hfq.schemas.TAQ,
                        partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
                        sort_by=("symbol", "time"))
    t.append(hfq.synth.taq_table(dates=(DAY,), rows_per_day=rows, symbols=500, seed=7))
    symbol = t.scan(columns=["symbol"]).to_arrow().column(0)[rows // 2].as_py()
    reads = {
        "day": lambda: t.scan(dates=DAY).to_arrow(),
        "columns": lambda: t.scan(dates=DAY, columns=["bid", "ofr"]).to_arrow(),
        "symbol": lambda: t.scan(dates=DAY, symbols=[symbol]).to_arrow(),
    }
    real = fragment.check_read
    records = [f for f in t.snapshot().fragments()]

    def check_all() -> None:
        for record in records:
            real(fragment.load_file(db.session.store, record.file), record, None)

    check_all()
    check_s = statistics.median(_timed(check_all) for _ in range(repeats))
    out = []
    for name, read in reads.items():
        expected = read()
        times: dict[str, list[float]] = {"with": [], "without": []}
        for i in range(repeats + 1):
            for mode in (("with", "without") if i % 2 else ("without", "with")):
                fragment.check_read = real if mode == "with" else (lambda *a, **k: None)
                try:
                    took = _timed(read)
                finally:
                    fragment.check_read = real
                if i:   # the first round warms up
                    times[mode].append(took)
        assert read().equals(expected)
        with_s, without_s = (statistics.median(times[m]) for m in ("with", "without"))
        whole = name != "symbol"   # a symbol's read checks only the batches it touches
        out.append({"codec": codec, "read": name, "rows": expected.num_rows,
                    "with_s": with_s, "without_s": without_s,
                    "overhead": with_s / without_s - 1,
                    "check_s": check_s if whole else None,
                    "check_share": check_s / without_s if whole else None})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=3_000_000, help="rows in the day")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--codec", nargs="+", default=["zstd", "lz4", "none"])
    args = p.parse_args(argv)
    root = tempfile.mkdtemp(prefix="hfq-checksum-")
    try:
        print(f"{'codec':6} {'read':8} {'rows':>10} {'with s':>9} {'without s':>9} overhead"
              f" {'check s':>8} check/read")
        for codec in args.codec:
            for r in measure_codec(root, args.rows, codec, args.repeats):
                check = "" if r["check_s"] is None else \
                    f" {r['check_s']:8.4f} {r['check_share']:9.1%}"
                print(f"{r['codec']:6} {r['read']:8} {r['rows']:>10,} {r['with_s']:9.4f} "
                      f"{r['without_s']:9.4f} {r['overhead']:+8.1%}{check}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
