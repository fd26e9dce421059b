"""Schema evolution without rewriting a file: column identities and file layouts.

A table whose columns changed (``add_column``, ``drop_column``, ``rename_column``,
``widen_column``) keeps, in its options (``evolution``), an id per column -- a column keeps
its id through renames and widenings -- and every *layout* its files were written in: the
(id, name, type) of each column a file holds, in order.  Each fragment records its layout
(:attr:`hfq.catalog.records.Fragment.layout`; 0, the schema at the table's creation, for every
file written before).  Reading a file of an older layout (:meth:`Layouts.read_columns`,
:meth:`Layouts.adapt`): a column the file has is read under its name there and cast to
today's type (a widening: exact); a column added since is its default (NULL unless
``default=``); a column dropped since is not read.  So ``add_column`` over years of data
writes one record, and a version read by time travel uses its own schema and layouts.

Only what is exact is allowed: widening INT/SHORT -> LONG, SHORT -> INT, FLOAT -> DOUBLE;
partition columns are never dropped, renamed or widened (they name the partitions); the dedup
key and the ``known_at`` column are not dropped (renamed, the options follow).

Examples
--------
>>> from hfq import schema as s
>>> import hfq
>>> sch = s.Schema({"sym": s.SYMBOL, "qty": s.INT})
>>> opts: dict = {}
>>> sch, opts = add_column(sch, opts, hfq.Hash("sym", 2), (), "venue", "SYMBOL", "XNYS")
>>> sch, opts = widen_column(sch, opts, hfq.Hash("sym", 2), (), "qty", "LONG")
>>> lay = Layouts.of(opts)
>>> lay.current, lay.read_columns(0, ["sym", "qty", "venue"])
(2, ['sym', 'qty'])
>>> old = pa.table({"sym": pa.array(["A"]).dictionary_encode(), "qty": pa.array([7], pa.int32())})
>>> lay.adapt(old, 0, ["qty", "venue"], sch).to_pylist()
[{'qty': 7, 'venue': 'XNYS'}]
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hfq.errors import SchemaMismatchError
from hfq.partition import Compo, Scheme
from hfq.schema import TYPES, Schema, check_name

__all__ = ["WIDENINGS", "Layouts", "add_column", "drop_column", "rename_column",
           "widen_column"]

WIDENINGS = {("SHORT", "INT"), ("SHORT", "LONG"), ("INT", "LONG"), ("FLOAT", "DOUBLE")}
"""The type changes that keep every value exactly."""


@dataclass(frozen=True)
class Layouts:
    """A table's column ids and file layouts (small and picklable: readers get it)."""

    current: int
    ids: tuple[int, ...]
    """The id of each column of today's schema, in order."""
    layouts: Mapping[int, tuple[tuple[int, str, str], ...]]
    defaults: Mapping[int, Any]

    @staticmethod
    def of(options: Mapping[str, Any]) -> Layouts | None:
        """The layouts a table's options record (None: its columns never changed)."""
        ev = options.get("evolution")
        if not ev:
            return None
        return Layouts(int(ev["layout"]), tuple(int(i) for i in ev["ids"]),
                       {int(k): tuple((int(i), str(n), str(t)) for i, n, t in v)
                        for k, v in ev["layouts"].items()},
                       {int(k): v for k, v in ev["defaults"].items()})

    def _by_id(self, layout: int) -> dict[int, tuple[str, str]]:
        try:
            return {i: (n, t) for i, n, t in self.layouts[layout]}
        except KeyError:
            raise SchemaMismatchError(f"a file was written in column layout {layout}, which "
                                      "this version of the table does not record") from None

    def file_schema(self, layout: int) -> pa.Schema:
        """The Arrow schema of a file of ``layout`` (its columns in its order)."""
        return pa.schema([pa.field(n, TYPES[t].arrow) for _, n, t in self.layouts[layout]])

    def read_columns(self, layout: int, columns: Sequence[str]) -> list[str]:
        """The names, in a file of ``layout``, of those of today's ``columns`` it holds."""
        held = self._by_id(layout)
        ids = dict(zip(self._names(), self.ids))
        return [held[ids[c]][0] for c in columns if ids[c] in held]

    def adapt(self, table: pa.Table, layout: int, columns: Sequence[str],
              schema: Schema) -> pa.Table:
        """A file's ``table`` (read with :meth:`read_columns`) as today's ``columns``:
        renamed, widened, and the columns added since filled with their defaults."""
        held = self._by_id(layout)
        ids = dict(zip(schema.names, self.ids))
        arrays = []
        for name in columns:
            want = schema[name].arrow
            cid = ids[name]
            if cid in held:
                col = table.column(held[cid][0])
                arrays.append(col if col.type == want else col.cast(want))
            else:
                arrays.append(_constant(self.defaults.get(cid), want, table.num_rows))
        return pa.Table.from_arrays(arrays, schema=pa.schema([schema.arrow.field(n)
                                                              for n in columns]))

    def _names(self) -> list[str]:
        return [n for _, n, _ in self.layouts[self.current]]


def _constant(value: Any, typ: pa.DataType, n: int) -> pa.ChunkedArray:
    if value is None:
        return pa.chunked_array([pa.nulls(n, typ)])
    if pa.types.is_dictionary(typ):
        return pa.chunked_array([pa.DictionaryArray.from_arrays(
            pa.array([0] * n, typ.index_type), pa.array([value], typ.value_type))])
    scalar = _typed(value, typ)
    return pa.chunked_array([pa.array([scalar] * n, typ)])


def _typed(value: Any, typ: pa.DataType) -> Any:
    """A default as JSON keeps it, back in the column's type."""
    if pa.types.is_date(typ) and isinstance(value, str):
        return dt.date.fromisoformat(value)
    if (pa.types.is_timestamp(typ)) and isinstance(value, str):
        return dt.datetime.fromisoformat(value)
    if pa.types.is_time(typ) and isinstance(value, str):
        return dt.time.fromisoformat(value)
    return value


# -- the changes: (schema, options) -> (schema, options) ------------------------------------------
def _state(schema: Schema, options: Mapping[str, Any]) -> dict[str, Any]:
    ev = options.get("evolution")
    if ev:
        return {"layout": ev["layout"], "ids": list(ev["ids"]), "next": ev["next"],
                "layouts": dict(ev["layouts"]), "defaults": dict(ev["defaults"])}
    first = [[i, n, t.name] for i, (n, t) in enumerate(schema)]
    return {"layout": 0, "ids": list(range(len(schema))), "next": len(schema),
            "layouts": {"0": first}, "defaults": {}}


def _commit(state: dict[str, Any], columns: list[tuple[int, str, str]],
            options: Mapping[str, Any], **changed: Any) -> tuple[Schema, dict[str, Any]]:
    layout = max(int(k) for k in state["layouts"]) + 1
    state["layouts"][str(layout)] = [list(c) for c in columns]
    state["layout"] = layout
    state["ids"] = [i for i, _, _ in columns]
    out = {**options, **changed, "evolution": state}
    return Schema([(n, TYPES[t]) for _, n, t in columns]), out


def _columns(schema: Schema, state: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [(i, n, t.name) for i, (n, t) in zip(state["ids"], schema)]


def _protected(scheme: Scheme | Compo, name: str, what: str) -> None:
    if name in {lvl.column for lvl in scheme.levels()}:
        raise SchemaMismatchError(f"{what} {name!r}: it is a partition column (it names the "
                                  "partitions; a new table with the new layout is the way)")


def _existing(schema: Schema, name: str) -> None:
    if name not in schema:
        raise SchemaMismatchError(f"no column {name!r}; the columns are "
                                  f"{', '.join(schema.names)}")


def add_column(schema: Schema, options: Mapping[str, Any], scheme: Scheme | Compo,
               sort_by: Sequence[str], name: str, type: str, default: Any = None
               ) -> tuple[Schema, dict[str, Any]]:
    """The schema and options with column ``name`` of hfq type ``type`` added last; stored
    files read it as ``default``."""
    check_name(name, "column")
    if name in schema:
        raise SchemaMismatchError(f"column {name!r} exists already")
    kind = TYPES.get(str(type).upper())
    if kind is None:
        raise SchemaMismatchError(f"unknown column type {type!r}; choose one of "
                                  f"{', '.join(TYPES)}")
    if default is not None:
        try:
            pa.array([_typed(default, kind.arrow)], kind.arrow)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise SchemaMismatchError(f"default {default!r} is not a {kind.name}: "
                                      f"{str(exc).splitlines()[0]}") from None
    state = _state(schema, options)
    cid = int(state["next"])
    state["next"] = cid + 1
    if default is not None:
        state["defaults"][str(cid)] = default.isoformat() if isinstance(
            default, (dt.date, dt.time)) else default
    return _commit(state, [*_columns(schema, state), (cid, name, kind.name)], options)


def drop_column(schema: Schema, options: Mapping[str, Any], scheme: Scheme | Compo,
                sort_by: Sequence[str], name: str) -> tuple[Schema, dict[str, Any]]:
    """The schema and options without column ``name`` (its values stay in the files, unread
    from now on, and in older versions)."""
    _existing(schema, name)
    _protected(scheme, name, "drop_column")
    taken = {"sort column": name in sort_by,
             "dedup key column": name in (options.get("unique") or ()),
             "known_at column": options.get("known_at") == name}
    for what, hit in taken.items():
        if hit:
            raise SchemaMismatchError(f"drop_column {name!r}: it is the table's {what}")
    if len(schema) == 1:
        raise SchemaMismatchError("a table keeps at least one column")
    state = _state(schema, options)
    kept = [c for c in _columns(schema, state) if c[1] != name]
    return _commit(state, kept, options)


def rename_column(schema: Schema, options: Mapping[str, Any], scheme: Scheme | Compo,
                  sort_by: Sequence[str], name: str, new: str
                  ) -> tuple[Schema, dict[str, Any]]:
    """The schema and options with column ``name`` called ``new`` (the sort columns, dedup
    key and ``known_at`` options follow; the files are not touched)."""
    _existing(schema, name)
    _protected(scheme, name, "rename_column")
    check_name(new, "column")
    if new in schema:
        raise SchemaMismatchError(f"rename_column: column {new!r} exists already")
    state = _state(schema, options)
    cols = [(i, new if n == name else n, t) for i, n, t in _columns(schema, state)]
    changed: dict[str, Any] = {}
    if name in (options.get("unique") or ()):
        changed["unique"] = [new if c == name else c for c in options["unique"]]
    for opt in ("known_at", "date_column", "symbol_column"):
        if options.get(opt) == name:
            changed[opt] = new
    return _commit(state, cols, options, **changed)


def widen_column(schema: Schema, options: Mapping[str, Any], scheme: Scheme | Compo,
                 sort_by: Sequence[str], name: str, type: str
                 ) -> tuple[Schema, dict[str, Any]]:
    """The schema and options with column ``name`` widened to ``type`` (INT -> LONG, FLOAT ->
    DOUBLE...: exact for every value stored)."""
    _existing(schema, name)
    _protected(scheme, name, "widen_column")
    old, wanted = schema[name].name, str(type).upper()
    if (old, wanted) not in WIDENINGS:
        allowed = ", ".join(f"{a} -> {b}" for a, b in sorted(WIDENINGS))
        raise SchemaMismatchError(f"widen_column {name!r}: {old} -> {wanted} is not a widening "
                                  f"that keeps every value ({allowed})")
    state = _state(schema, options)
    cols = [(i, n, wanted if n == name else t) for i, n, t in _columns(schema, state)]
    return _commit(state, cols, options)
