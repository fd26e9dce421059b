"""The property of issue 27: any random sequence of append / delete / update / upsert /
overwrite / add_column / rename_column -- over rows with NULLs, NaN, +-inf, -0.0, int
extremes, empty text and duplicate keys, on a keyed or an unkeyed table -- leaves the table
equal, at every version (by version number, by the time it was committed, by a tag), to a
polars model that applies the same operations in memory."""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

import hfq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "change"))
from changekit import DAYS, KEY, SYMBOLS, canonical, dedup_model, make, rows, text  # noqa: E402

OPS = ("append", "delete", "update", "upsert", "overwrite", "add_column", "rename_column")


def _slice(df: pl.DataFrame, day: dt.date, symbols: list[str]) -> pl.Expr:
    return (pl.col("date") == day) & pl.col("symbol").cast(pl.String).is_in(symbols)


@settings(max_examples=12, deadline=None)
@given(data=st.data(), keyed=st.booleans(), keep=st.sampled_from(["first", "last"]))
def test_any_sequence_of_changes_equals_the_model_at_every_version(data, keyed, keep):
    with tempfile.TemporaryDirectory() as root:
        db = hfq.connect(root, batch_rows=8)
        t = make(db, **({"unique": KEY, "keep": keep} if keyed else {}))
        model = text(rows(0, 0))
        models = {0: model}
        renamed: dict[str, str] = {}      # original name -> current
        added: list[str] = []

        def col(name: str) -> str:
            return renamed.get(name, name)

        for step in range(data.draw(st.integers(2, 6), label="steps")):
            op = data.draw(st.sampled_from(OPS), label=f"op{step}")
            seed = data.draw(st.integers(0, 10_000), label=f"seed{step}")
            if op in ("append", "upsert", "overwrite"):
                day = data.draw(st.sampled_from(DAYS), label=f"day{step}")
                syms = data.draw(st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=3,
                                          unique=True), label=f"symbols{step}")
                frame = rows(data.draw(st.integers(0, 40)), seed,
                             days=[day] if op == "overwrite" else None,
                             symbols=syms if op == "overwrite" else None)
                frame = frame.rename({k: v for k, v in renamed.items()})
                frame = frame.with_columns(pl.lit(None, pl.Int64).alias(c) for c in added)
                key = tuple(col(k) for k in KEY)
                if op == "append":
                    t.append(frame)
                    model = dedup_model(model, frame, key, keep) if keyed else \
                        pl.concat([model, text(frame)])
                elif op == "upsert":
                    how = data.draw(st.sampled_from(["first", "last"]), label=f"keep{step}")
                    t.upsert(frame, on=key, keep=how)
                    model = dedup_model(model, frame, key, how)
                else:
                    t.overwrite(frame, dates=day, symbols=syms)
                    kept = model.filter(~_slice(model, day, syms))
                    model = dedup_model(kept, frame, key, keep) if keyed else \
                        pl.concat([kept, text(frame)])
            elif op == "delete":
                k = data.draw(st.integers(0, 3), label=f"seq{step}")
                where = (pl.col(col("seq")) == k) | pl.col(col("px")).is_nan()
                t.delete(where=where)
                model = model.filter(~where.fill_null(False))
            elif op == "update":
                k = data.draw(st.integers(0, 3), label=f"seq{step}")
                hit = pl.col(col("seq")) == k
                t.update(set={col("px"): pl.col(col("px")) * -2, col("note"): "fixed"},
                         where=hit)
                model = model.with_columns(
                    pl.when(hit).then(pl.col(col("px")) * -2).otherwise(pl.col(col("px")))
                    .alias(col("px")),
                    pl.when(hit).then(pl.lit("fixed")).otherwise(pl.col(col("note")))
                    .alias(col("note")))
            elif op == "add_column":
                name = f"extra{len(added)}"
                t.add_column(name, "LONG", default=None)
                added.append(name)
                model = model.with_columns(pl.lit(None, pl.Int64).alias(name))
            else:
                old = data.draw(st.sampled_from(["px", "qty", "note"]), label=f"col{step}")
                new = f"{old}_{step}"
                t.rename_column(col(old), new)
                model = model.rename({col(old): new})
                renamed[old] = new
            if t.refresh().version not in models:
                models[t.version] = model
            if data.draw(st.booleans(), label=f"tag{step}"):
                t.tag(f"v{t.version}-{step}")
        catalog = db.session.catalog
        for version, want in models.items():
            assert canonical(t.scan(version=version).to_polars()).equals(canonical(want)), \
                version
            when = dt.datetime.fromtimestamp(catalog.version("t", version).committed_at,
                                             dt.timezone.utc)
            assert canonical(t.scan(as_of=when).to_polars()).equals(canonical(want)), version
        for label, body in t.tags().rows_by_key("tag", named=True).items():
            got = t.scan(as_of=label).to_polars()
            assert canonical(got).equals(canonical(models[body[0]["version"]])), label
        if keyed:
            assert not t.to_polars().select([col(k) for k in KEY]).is_duplicated().any()
