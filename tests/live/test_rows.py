"""A node's live rows by partition (:mod:`hfq.live.rows`): whatever the order of batches
arriving (each with slices of two partitions, given to them together by ``Pending``: taken by
a handover every ``TAIL`` batches and installed after more batches came), queries reading them
(which wait for that handover, flush the pending batches and keep the columns they read as
polars), and
write-downs dropping a prefix, the rows a snapshot reads of each partition -- as Arrow
(``take``) and as the polars frame the engine reads (``take_frame``) -- are exactly those of
an oracle that keeps every slice in a plain list and filters it by the same rule
(publisher's slice numbers and sequence numbers, the written-down cut), in arrival order;
and the days a snapshot is told a partition has live rows of are the oracle's.  Ray-free.
"""

from __future__ import annotations

import itertools
import threading

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hfq.live import rows as liverows
from hfq.live.rows import PartRows, Pending, prepare

SYMBOLS = ["", "IBM", "MSFT", "\x00", "🙂", "a" * 40]
DAYS = ["2024-01-02", "2024-01-03"]
SCHEMA = pa.schema([("symbol", pa.dictionary(pa.int32(), pa.string())),
                    ("bid", pa.float64()), ("n", pa.int64())])
VALUES = [0.0, -0.0, float("nan"), float("inf"), -1.5, None]


def slice_rows(size: int, start: int, wide: bool) -> pa.Table:
    """``size`` rows whose ``n`` numbers them from ``start``; ``wide``: the dictionary
    holds every symbol (a slice of a published batch), not only the ones used."""
    symbols = [SYMBOLS[(start + i) % len(SYMBOLS)] for i in range(size)]
    if wide:
        dictionary = pa.array(SYMBOLS + ["never used"], pa.string())
        symbol = pa.DictionaryArray.from_arrays(
            pa.array([SYMBOLS.index(s) for s in symbols], pa.int32()), dictionary)
    else:
        symbol = pa.array(symbols, pa.string()).dictionary_encode()
    return pa.Table.from_arrays(
        [symbol, pa.array([VALUES[(start + i) % len(VALUES)] for i in range(size)],
                          pa.float64()),
         pa.array(range(start, start + size), pa.int64())], schema=SCHEMA)


def expected(held: list[tuple[str, int, int, str, pa.Table]], seqs: dict[str, int],
             picks: dict[str, tuple[int, int]], cut: dict[str, dict[str, int]],
             columns: list[str]) -> pl.DataFrame:
    kept = [rows.select(columns) for pub, seq, pseq, day, rows in held
            if pub in picks and pub in seqs and seq <= seqs[pub]
            and picks[pub][0] <= pseq <= picks[pub][1] and seq > cut.get(day, {}).get(pub, -1)]
    if not kept:
        return pl.DataFrame()
    frame = pl.from_arrow(pa.concat_tables(kept).combine_chunks())
    assert isinstance(frame, pl.DataFrame)
    return frame


def same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    plain = pl.col(pl.Categorical).cast(pl.String)
    assert got.with_columns(plain).equals(want.with_columns(plain), null_equal=True), \
        (got, want)


step = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["a", "b"]), st.integers(0, 9),
              st.integers(0, 9), st.sampled_from(DAYS), st.booleans()),
    st.tuples(st.just("read"), st.integers(0, 40), st.integers(0, 40), st.integers(-1, 40),
              st.lists(st.sampled_from(["symbol", "bid", "n"]), min_size=1, max_size=3,
                       unique=True)),
    st.tuples(st.just("drop"), st.integers(0, 40)),
    st.tuples(st.just("install")))


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=40), tail=st.sampled_from([1, 2, 3, 128]))
def test_every_read_gives_the_oracles_rows(steps, tail):
    saved = liverows.TAIL
    liverows.TAIL = tail
    try:
        parts = [PartRows(["2024-01-02", 3]), PartRows(["2024-01-02", 5])]
        pending = Pending()
        held: list[list[tuple[str, int, int, str, pa.Table]]] = [[], []]
        seq = {"a": 0, "b": 0}
        start = 0
        out: list = []   # a handover's batches taken, not installed yet (a node's thread)

        def settle():   # a read waits for the handover out, then hands over the rest
            if out:
                pending.install(out.pop())
            pending.flush()

        for s in steps:
            if s[0] == "add":   # a batch: a slice of each partition (sizes 0 to 9)
                _, pub, first, second, day, wide = s
                seq[pub] += 1
                rows = slice_rows(first + second, start, wide)
                start += first + second
                for i, n in enumerate((first, second)):
                    parts[i].add(pub, seq[pub], seq[pub], day, n)
                    held[i].append((pub, seq[pub], seq[pub], day,
                                    rows.slice(0 if i == 0 else first, n)))
                pending.add([(parts[0], first), (parts[1], second)], rows)
                if pending.due():   # taken now; installed after more batches came
                    out.append(prepare(pending.take()))
            elif s[0] == "install":
                if out:
                    pending.install(out.pop())
            elif s[0] == "read":
                _, top_a, lo, cut_a, columns = s
                seqs = {"a": top_a, "b": 40}
                picks = {"a": (lo, 40), "b": (1, 40)}
                cut = {DAYS[0]: {"a": cut_a}} if cut_a >= 0 else {}
                settle()
                for part, mine in zip(parts, held):
                    assert part.live_days(cut) == sorted(
                        {day for pub, seq, _, day, rows in mine
                         if rows.num_rows and seq > cut.get(day, {}).get(pub, -1)})
                    want = expected(mine, seqs, picks, cut, columns)
                    frame = part.take_frame(seqs, picks, cut, columns)
                    if want.height == 0:
                        assert frame is None or frame.height == 0
                        continue
                    assert frame is not None
                    same(frame, want)
                    got = pl.from_arrow(part.take(seqs, picks, cut, columns))
                    assert isinstance(got, pl.DataFrame)
                    same(got, want)
            else:
                _, upto = s
                settle()
                for i, part in enumerate(parts):
                    part.drop({day: {"a": upto} for day in DAYS}, 7)
                    gone = part.dropped.get("a", (0, 0))[0]
                    held[i] = [h for h in held[i] if not (h[0] == "a" and h[2] <= gone)]
                    assert part.rows == sum(h[4].num_rows for h in held[i])
                    assert part.live_days({}) == sorted(
                        {h[3] for h in held[i] if h[4].num_rows})
    finally:
        liverows.TAIL = saved


def test_a_query_after_each_slice_converts_each_row_once(monkeypatch):
    """The columns a query reads are kept as polars and only the new slice's rows are
    converted: after 200 slices read one by one, each row was converted once and the kept
    column holds every row once, in few chunks."""
    converted = []
    convert = liverows._series
    monkeypatch.setattr(liverows, "_series",
                        lambda name, column: converted.append(len(column)) or convert(name, column))
    part = PartRows(["2024-01-02", 0])
    pending = Pending()
    for i in range(200):
        part.add("a", i + 1, i + 1, DAYS[0], 3)
        pending.add([(part, 3)], slice_rows(3, 3 * i, True))
        pending.flush()
        frame = part.take_frame({"a": i + 1}, {"a": (1, i + 1)}, {}, ["n"])
        assert frame is not None and frame["n"].to_list() == list(range(3 * i + 3))
    assert frame["n"].n_chunks() <= len(part.body) <= 2 * 9   # a binary counter: O(log n)
    assert all(run.frames["n"].n_chunks() == 1 for run in part.body)
    assert sum(converted) == 600


def test_a_batch_read_after_it_arrives_is_converted_once_for_all_its_slices(monkeypatch):
    """A batch with slices in three partitions (one of them two slices, of two days), read
    after each batch: each column read is converted once a batch (not once a slice: a
    conversion costs about as much whatever its rows), and
    each partition reads its own slice's rows of it, in order."""
    converted = []
    convert = liverows._series
    monkeypatch.setattr(liverows, "_series",
                        lambda name, column: converted.append(len(column)) or convert(name, column))
    parts = [PartRows(["2024-01-02", k]) for k in range(3)]
    pending = Pending()
    held: list[list] = [[], [], []]
    for i in range(40):
        rows = slice_rows(12, 12 * i, True)
        sizes = [(0, 2, DAYS[0]), (1, 3, DAYS[0]), (2, 4, DAYS[0]), (2, 3, DAYS[1])]
        slices, offset = [], 0
        for pseq, (k, n, day) in enumerate(sizes, 1):
            parts[k].add("a", i + 1, 4 * i + pseq, day, n)
            held[k].append(("a", i + 1, 4 * i + pseq, day, rows.slice(offset, n)))
            slices.append((parts[k], n))
            offset += n
        pending.add(slices, rows)
        pending.flush()
        for k in (2, 0, 1):
            frame = parts[k].take_frame({"a": i + 1}, {"a": (1, 4 * i + 4)}, {},
                                        ["n", "symbol"])
            want = expected(held[k], {"a": i + 1}, {"a": (1, 4 * i + 4)}, {}, ["n", "symbol"])
            assert frame is not None
            same(frame, want)
    # (the first batch's two slices of partition 2 were joined before any read kept a
    # column: that run's 7 rows are converted on their own, once)
    assert converted[-78:] == [12, 12] * 39 and converted[:-78] == [7, 7, 12, 12]


def test_runs_stop_joining_past_their_size(monkeypatch):
    """Past RUN_ROWS rows runs are no longer joined (a join never copies more), and a read
    still sees every row once, in order, from the runs' kept polars columns."""
    monkeypatch.setattr(liverows, "RUN_ROWS", 16)
    part = PartRows(["2024-01-02", 0])
    pending = Pending()
    for i in range(100):
        part.add("a", i + 1, i + 1, DAYS[0], 3)
        pending.add([(part, 3)], slice_rows(3, 3 * i, i % 2 == 0))
        pending.flush()
        if i % 7 == 0:
            frame = part.take_frame({"a": i + 1}, {"a": (1, i + 1)}, {}, ["n", "symbol"])
            assert frame is not None and frame["n"].to_list() == list(range(3 * i + 3))
    assert all(run.rows <= 16 for run in part.body)
    assert 300 // 16 <= len(part.body) <= 300 // 16 + 2 * 4
    frame = part.take_frame({"a": 100}, {"a": (40, 100)}, {}, ["symbol", "n"])
    want = expected([("a", q, q, DAYS[0], slice_rows(3, 3 * (q - 1), q % 2 == 1))
                     for q in range(1, 101)], {"a": 100}, {"a": (40, 100)}, {}, ["symbol", "n"])
    assert frame is not None
    same(frame, want)


def test_a_partition_read_before_its_rows_arrive_is_refused():
    part = PartRows(["2024-01-02", 0])
    part.add("a", 1, 1, DAYS[0], 3)
    with pytest.raises(RuntimeError, match="not extended"):
        part.take({"a": 1}, {"a": (1, 1)}, {}, ["n"])
    with pytest.raises(ValueError, match="2 rows for slices of 3"):
        part.extend(slice_rows(2, 0, False))


@pytest.mark.parametrize("flush_every", [1, 3, 10])
def test_a_day_is_live_until_the_cut_holds_its_last_slice(flush_every):
    """A snapshot is told a partition has live rows of a day while any slice of it is newer
    than the written-down cut -- one publisher's ten slices of one day (another's of the
    next day beside them), their runs made by flushes of 1, 3 or 10 batches, joined, and
    rebuilt by a drop: the oracle is the list of slices."""
    part = PartRows(["2024-01-02", 0])
    pending = Pending()
    for i in range(1, 11):
        part.add("a", i, i, DAYS[0], 2)
        part.add("b", i, i, DAYS[1], 1)
        pending.add([(part, 2), (part, 1)], slice_rows(3, 3 * i, True))
        if i % flush_every == 0:
            pending.flush()
    pending.flush()
    for dropped in (0, 4):
        if dropped:
            part.drop({DAYS[0]: {"a": dropped}}, 3)   # a run rebuilt from the rows kept
        for k in range(12):
            want = ([DAYS[0]] if k < 10 else []) + [DAYS[1]]
            assert part.live_days({DAYS[0]: {"a": k}}) == want, (dropped, k)
        assert part.live_days({DAYS[0]: {"a": 10}, DAYS[1]: {"b": 9}}) == [DAYS[1]]
        assert part.live_days({DAYS[0]: {"a": 10}, DAYS[1]: {"b": 10}}) == []


@pytest.mark.parametrize("flush_every", [1, 3, 10])
def test_every_snapshot_of_runs_spanning_many_batches(flush_every):
    """A run holds several batches (a flush of 3 or 10; joined runs): a snapshot taking the
    whole run or none of it by the run's least and greatest numbers must still see exactly
    the oracle's rows for every sequence limit, slice range and written-down cut."""
    part = PartRows(["2024-01-02", 0])
    pending = Pending()
    held = []
    for i in range(1, 11):
        part.add("a", i, i, DAYS[0], 2)
        part.add("b", i, i, DAYS[0], 1)
        rows = slice_rows(3, 3 * i, i % 2 == 0)
        held += [("a", i, i, DAYS[0], rows.slice(0, 2)), ("b", i, i, DAYS[0], rows.slice(2, 1))]
        pending.add([(part, 2), (part, 1)], rows)
        if i % flush_every == 0:
            pending.flush()
    pending.flush()
    for top in range(0, 12):
        for lo, hi in ((1, 10), (4, 10), (1, 6), (3, 7)):
            for cut_a, b_too in itertools.product(range(-1, 12), (False, True)):
                b_top, b_picks, b_cut = (top, (lo, hi), cut_a) if b_too else (10, (1, 10), -1)
                seqs, picks = {"a": top, "b": b_top}, {"a": (lo, hi), "b": b_picks}
                cut = {DAYS[0]: {"a": cut_a, "b": b_cut}}
                want = expected(held, seqs, picks, cut, ["n", "bid"])
                got = pl.from_arrow(part.take(seqs, picks, cut, ["n", "bid"]))
                assert isinstance(got, pl.DataFrame)
                if want.height == 0:
                    assert got.height == 0
                    continue
                same(got, want)


def test_a_read_waits_for_the_handover_out_and_pairs_each_slice_with_its_rows():
    """A handover takes two batches and puts their rows together without the lock; a third
    batch comes; a read then waits for that handover to be installed before it hands over
    the third: every slice gets its own rows, in order (sizes 3, 4, 5: a slice paired with
    another's rows would not add up)."""
    lock = threading.RLock()
    waited = threading.Event()

    class Watched(threading.Condition):
        def wait(self, timeout=None):
            waited.set()
            return super().wait(timeout)

    pending = Pending(Watched(lock))
    part = PartRows(["2024-01-02", 0])
    batches = [slice_rows(n, start, True) for n, start in ((3, 0), (4, 3), (5, 7))]

    def publish(i):
        with lock:
            part.add("a", i + 1, i + 1, DAYS[0], batches[i].num_rows)
            pending.add([(part, batches[i].num_rows)], batches[i])

    publish(0)
    publish(1)
    with lock:
        taken = pending.take()
    publish(2)
    ready = prepare(taken)            # the handover's thread, without the lock

    def install():
        waited.wait(60)
        with lock:
            pending.install(ready)

    handover = threading.Thread(target=install)
    handover.start()
    try:
        with lock:
            pending.flush()           # the read: waits for the handover out
    finally:
        waited.set()
        handover.join(60)
    same(part.take_frame({"a": 9}, {"a": (1, 9)}, {}, ["symbol", "bid", "n"]),
         expected([("a", i + 1, i + 1, DAYS[0], b) for i, b in enumerate(batches)],
                  {"a": 9}, {"a": (1, 9)}, {}, ["symbol", "bid", "n"]))
    assert part.take({"a": 2}, {"a": (1, 9)}, {}, ["n"]).column("n").to_pylist() == \
        list(range(7))
