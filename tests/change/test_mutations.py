"""Mutations and dedup keys (issue 27, What to build 1-2), against a polars model on rows with
NULL, NaN, +-inf, -0.0, int extremes, empty text and duplicate keys; the cost is the
partitions touched; a predicate matching nothing commits nothing; empty and reversed ranges
are errors; two writers racing (made exact with fault points) lose and duplicate nothing."""

from __future__ import annotations

import datetime as dt
import threading

import polars as pl
import pytest
from changekit import DAYS, KEY, canonical, dedup_model, make, rows, same

import hfq
from hfq import faults
from hfq.errors import ArgumentError, DuplicateKeyError, SchemaMismatchError


@pytest.fixture
def db(tmp_path):
    return hfq.connect(str(tmp_path / "db"), batch_rows=16)


def loaded(db, n=300, seed=1, **options):
    t = make(db, **options)
    t.append(rows(n, seed))
    return t


def files_by_partition(t):
    return {p: tuple(f.file for f in e.fragments) for p, e in t.refresh().snapshot()
            .partitions.items()}


# -- delete --
def test_delete_by_predicate_dates_and_symbols_equals_the_model(db):
    t = loaded(db)
    model = t.to_polars()
    where = pl.col("px").is_nan() | pl.col("note").is_null() | (pl.col("qty") < 0)
    report = t.delete(where=where, dates=(DAYS[0], DAYS[1]), symbols=["AA", "CC", "ZZ"])
    in_slice = pl.col("date").is_between(DAYS[0], DAYS[1]) & \
        pl.col("symbol").cast(pl.String).is_in(["AA", "CC", "ZZ"])
    gone = model.filter((in_slice & where).fill_null(False))
    assert report.changed and report.rows_removed == gone.height > 0
    assert same(t, model.filter(~(in_slice & where).fill_null(False)))
    assert same(t.scan(version=1), model)             # the old version is still there
    assert t.history()["operation"][0] == "delete"


def test_a_predicate_matching_nothing_commits_nothing_and_says_so(db):
    t = loaded(db)
    before = t.versions()
    report = t.delete(where=pl.col("qty") == 123456, symbols="AA")
    assert not report.changed and report.version == 1 and t.versions() == before
    assert "no row matched; nothing changed" in str(report)
    assert not t.update(set={"px": 0.0}, where=pl.col("qty") == 123456).changed
    assert t.versions() == before


@pytest.mark.parametrize("kwargs,argument", [
    ({"dates": ("2024-01-04", "2024-01-02")}, "dates"),
    ({"symbols": []}, "symbols"),
    ({"dates": (None, None)}, "dates"),
    ({}, "where"),
    ({"where": pl.col("nope") > 1}, "where"),
])
def test_empty_reversed_and_missing_ranges_are_errors(db, kwargs, argument):
    t = loaded(db, n=50)
    with pytest.raises(ArgumentError) as err:
        t.delete(**kwargs)
    assert err.value.argument == argument
    assert t.versions() == [0, 1]


def test_a_delete_rewrites_only_the_partition_it_touches(db):
    """O(touched): one symbol-day reads and rewrites one partition; every other partition
    keeps its files (same names), and the history names the one partition."""
    t = loaded(db, n=600)
    before = files_by_partition(t)
    report = t.delete(dates=DAYS[1], symbols="BB")
    after = files_by_partition(t)
    changed = {p for p in before if before[p] != after.get(p)}
    assert len(changed) == 1 and report.partitions == 1
    assert t.history(partitions=True).filter(pl.col("version") == 2)["partition"].to_list() == \
        sorted(changed)


@pytest.mark.parametrize("op", ["delete", "overwrite"])
def test_a_change_reads_the_catalog_pieces_of_the_day_it_touches_only(db, monkeypatch, op):
    """Flat in table size: a fresh handle (nothing cached) deleting or overwriting one
    symbol-day reads that day's manifest piece, none of the other days'."""
    days = [DAYS[0] + dt.timedelta(days=i) for i in range(8)]
    t = make(db)
    t.append(rows(400, 3, days=days))
    fresh = hfq.connect(db.session.store.root, batch_rows=16)["t"]
    store = fresh.session.catalog.store
    pieces: list[str] = []
    read = store.read_bytes
    monkeypatch.setattr(store, "read_bytes", lambda rel: (
        pieces.append(rel) if "/_manifests/" in rel else None, read(rel))[1])
    day = days[3]
    if op == "delete":
        report = fresh.delete(dates=day, symbols="BB")
    else:
        slice_ = rows(40, 9, days=[day], symbols=["BB"])
        report = fresh.overwrite(slice_, dates=day, symbols="BB")
    assert report.changed and report.partitions == 1
    assert pieces and all(day.isoformat() in p for p in pieces), pieces


# -- update --
def test_update_sets_columns_of_the_matching_rows_only(db):
    t = loaded(db)
    model = t.to_polars()
    hit = (pl.col("seq") == 0) & (pl.col("date") == DAYS[2])
    report = t.update(set={"px": pl.col("px") * 2 + pl.col("qty"), "note": "fixed",
                           "qty": pl.lit(None, pl.Int32)}, where=pl.col("seq") == 0,
                      dates=DAYS[2])
    want = model.with_columns(
        px=pl.when(hit).then(pl.col("px") * 2 + pl.col("qty")).otherwise(pl.col("px")),
        note=pl.when(hit).then(pl.lit("fixed")).otherwise(pl.col("note")),
        qty=pl.when(hit).then(pl.lit(None, pl.Int32)).otherwise(pl.col("qty")))
    assert report.rows_added == report.rows_removed == model.filter(hit).height > 0
    assert same(t, want)


def test_update_refuses_what_it_cannot_do_exactly(db):
    t = loaded(db, n=50)
    with pytest.raises(ArgumentError, match="partition column"):
        t.update(set={"date": DAYS[0]}, symbols="AA")
    with pytest.raises(SchemaMismatchError):          # a float into an INT: refused, not cut
        t.update(set={"qty": pl.col("qty") * 1.5}, symbols="AA")
    with pytest.raises(SchemaMismatchError):          # an int32 overflow: refused, not wrapped
        t.update(set={"qty": pl.col("qty").cast(pl.Int64) + 2**40}, symbols="AA")
    assert t.versions() == [0, 1]


# -- overwrite --
def test_overwrite_replaces_exactly_the_slice(db):
    t = loaded(db)
    model = t.to_polars()
    fresh = rows(40, 7, days=[DAYS[0]], symbols=["AA", "BB"])
    report = t.overwrite(fresh, dates=DAYS[0], symbols=["AA", "BB"])
    in_slice = (pl.col("date") == DAYS[0]) & pl.col("symbol").cast(pl.String).is_in(["AA", "BB"])
    assert report.rows_added == 40 and report.rows_removed == model.filter(in_slice).height
    assert same(t, pl.concat([canonical(model.filter(~in_slice)), canonical(fresh)]))


def test_overwrite_refuses_rows_outside_the_slice(db):
    t = loaded(db, n=50)
    with pytest.raises(ArgumentError, match="outside the slice"):
        t.overwrite(rows(10, 3), dates=DAYS[0])
    assert t.versions() == [0, 1]


# -- dedup keys and upsert --
@pytest.mark.parametrize("keep", ["first", "last"])
def test_keyed_appends_never_store_a_key_twice(db, keep):
    t = make(db, unique=KEY, keep=keep)
    first, second = rows(200, 1), rows(200, 2)
    t.append(first)
    t.append(second)
    model = dedup_model(dedup_model(first.head(0), first, KEY, keep), second, KEY, keep)
    assert same(t, model)
    assert not t.to_polars().select(KEY).is_duplicated().any()


def test_keep_error_refuses_a_clash_and_commits_nothing(db):
    t = make(db, unique=KEY, keep="error")
    first = rows(100, 1, seq_max=10_000)
    t.append(first.unique(subset=list(KEY)))
    with pytest.raises(DuplicateKeyError, match="stored already"):
        t.append(first.head(1))
    with pytest.raises(DuplicateKeyError, match="in the rows written"):
        t.append(pl.concat([first.head(1), first.head(1)]).with_columns(seq=pl.lit(-5)))
    assert t.versions() == [0, 1]


def test_null_keys_are_one_key(db):
    t = make(db, unique=("symbol", "date", "qty"), keep="last")
    frame = pl.DataFrame({"symbol": ["AA"] * 3, "date": [DAYS[0]] * 3,
                          "time": [dt.datetime(2024, 1, 2, 9)] * 3, "seq": [1, 2, 3],
                          "px": [1.0, 2.0, 3.0], "qty": [None, None, 5], "note": ["a"] * 3},
                         schema_overrides={"qty": pl.Int32, "time": pl.Datetime("ns")})
    t.append(frame)
    assert sorted(t.to_polars()["seq"].to_list()) == [2, 3]


def test_a_keyed_csv_load_keeps_the_key(db, tmp_path):
    t = make(db, unique=KEY, keep="last")
    t.append(rows(100, 1))
    csv = tmp_path / "more.csv"
    more = rows(100, 2)
    more.write_csv(csv)
    db.load_csv("t", str(csv))
    stored = t.refresh().to_polars()
    assert not stored.select(KEY).is_duplicated().any()
    assert stored.height == dedup_model(dedup_model(more.head(0), rows(100, 1), KEY, "last"),
                                        more, KEY, "last").height


@pytest.mark.parametrize("keep", ["first", "last"])
def test_upsert_equals_the_model(db, keep):
    t = loaded(db, n=200)
    model = t.to_polars().unique(subset=list(KEY), keep="last", maintain_order=True)
    t.overwrite(model.filter(pl.col("date") == DAYS[0]), dates=DAYS[0])
    t.overwrite(model.filter(pl.col("date") == DAYS[1]), dates=DAYS[1])
    t.overwrite(model.filter(pl.col("date") == DAYS[2]), dates=DAYS[2])
    assert same(t, model)
    new = rows(150, 5)
    t.upsert(new, on=KEY, keep=keep)
    assert same(t, dedup_model(model, new, KEY, keep))


def test_upsert_refuses_a_key_without_the_partition_columns(db):
    t = loaded(db, n=20)
    with pytest.raises(ArgumentError, match="every partition column"):
        t.upsert(rows(5, 2), on=("symbol", "time"))


# -- two writers --
def _held(tmp_path, point, call):
    """``call()`` in a thread held at fault ``point`` (its first hit) until released: the
    test acts in between.  Returns (release, join)."""
    gate = tmp_path / "gate"
    faults.arm(point, f"pause:{gate}@1")
    box: dict = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    reached = tmp_path / "gate.reached"
    for _ in range(6000):
        if reached.exists() or not thread.is_alive():
            break
        threading.Event().wait(0.01)
    assert reached.exists(), f"never reached {point}: {box}"

    def release():
        gate.touch()
        thread.join(60)
        faults.disarm()
        assert "error" not in box, box.get("error")
        return box["value"]
    return release


def test_a_delete_held_before_its_publish_misses_no_row_appended_meanwhile(db, tmp_path):
    """A deletes every AA row; before it publishes, B appends more AA rows.  A's commit
    finds the partitions it read changed, computes the delete again on B's version, and
    publishes: no AA row survives (a delete that stood in the old files' place would keep
    B's)."""
    t = loaded(db, n=200)
    other = hfq.connect(str(db.session.store.root), batch_rows=16)
    release = _held(tmp_path, "catalog.commit.before_publish",
                    lambda: t.delete(symbols="AA"))
    other["t"].append(rows(100, 8, symbols=["AA", "BB"]))
    report = release()
    assert report.attempts == 2
    final = t.refresh().to_polars()
    assert final.filter(pl.col("symbol") == "AA").height == 0
    assert final.filter(pl.col("symbol") == "BB").height == \
        rows(200, 1).filter(pl.col("symbol") == "BB").height + \
        rows(100, 8, symbols=["AA", "BB"]).filter(pl.col("symbol") == "BB").height


def test_an_upsert_and_an_append_at_once_lose_and_duplicate_nothing(db, tmp_path):
    t = make(db, unique=KEY, keep="last")
    base = rows(150, 1)
    t.append(base)
    up, app = rows(120, 2), rows(120, 3)
    other = hfq.connect(str(db.session.store.root), batch_rows=16)
    release = _held(tmp_path, "catalog.commit.before_publish",
                    lambda: t.upsert(up, keep="last"))
    other["t"].append(app)                  # commits first
    release()
    model = dedup_model(dedup_model(dedup_model(base.head(0), base, KEY, "last"), app, KEY,
                                    "last"), up, KEY, "last")
    final = t.refresh().to_polars()
    assert not final.select(KEY).is_duplicated().any()
    assert same(final, model)
