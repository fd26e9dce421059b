"""Random typed SQL expressions over a scope of columns: the expression half of the grammar.

Every production is a DuckDB construct hfq documents (or refuses by name), written so that
DuckDB accepts it on the scope's types: an expression of kind ``int``, ``float``, ``bool``,
``str``, ``date``, ``time``, ``ts`` (TIMESTAMP) or ``tstz`` (TIMESTAMPTZ).  Each production
carries a *tag* (``fn:round``, ``op:intdiv``, ``agg:count_lit``, ...): the tags a query used
are recorded, and a tag can be switched off (a construct with an open finding, see
``known.py``) -- a query is then drawn without it.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["AGG_TAGS", "PARAM_VALUES", "ExprGen", "Scope", "literal"]

KINDS = ("int", "float", "bool", "str", "date", "time", "ts", "tstz")
_ORDERABLE = ("int", "float", "str", "date", "time", "ts", "tstz", "bool")

_INT_LITS = ("0", "1", "2", "3", "-1", "7", "100", "2147483647", "-2147483648",
             "9223372036854775807", "32767")
_FLOAT_LITS = ("0.5", "-1.25", "2.0", "0.1", "1.5", "2.5", "-2.5", "1e300", "100.25",
               "CAST('NaN' AS DOUBLE)", "CAST('inf' AS DOUBLE)", "CAST('-inf' AS DOUBLE)",
               "CAST('-0.0' AS DOUBLE)", "0.0")
_FLOAT_STRINGS = ("'NaN'", "'inf'", "'-inf'", "'-0.0'", "'1.5'", "' 2 '")
_STR_LITS = ("''", "'A'", "'B'", "'IBM'", "'é'", "'日本株'", "'a%b'", "' '", "'abc'", "'x'",
             "'O''Neil'", "'_'")
_DATE_LITS = ("DATE '2024-01-05'", "DATE '2024-01-07'", "DATE '2024-01-08'",
              "DATE '2000-01-03'", "DATE '1970-01-01'", "DATE '2024-02-29'")
_TIME_LITS = ("TIME '09:30:00'", "TIME '00:00:00'", "TIME '23:59:59'", "TIME '16:00:00'",
              "TIME '10:00:00'", "TIME '09:30:00.25'")
_TS_LITS = ("TIMESTAMP '2024-01-05 09:30:00'", "TIMESTAMP '2024-01-07 00:00:00'",
            "TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '2024-01-05 23:59:59.999999'",
            "TIMESTAMP '2000-01-03 00:00:00'")
_INFINITE = ("CAST('-infinity' AS TIMESTAMP)", "CAST('infinity' AS TIMESTAMP)")
_TSTZ_LITS = ("TIMESTAMPTZ '2024-01-05 09:30:00+00'", "TIMESTAMPTZ '2024-01-07 00:00:00+00'",
              "TIMESTAMPTZ '1970-01-01 00:00:00+00'")
LITERALS = {"int": _INT_LITS, "float": _FLOAT_LITS, "str": _STR_LITS, "date": _DATE_LITS,
            "time": _TIME_LITS, "ts": _TS_LITS, "tstz": _TSTZ_LITS,
            "bool": ("TRUE", "FALSE")}
_STRING_FOR = {"date": ("'2024-01-05'", "'2024-01-07'"), "time": ("'09:30:00'", "'16:00'"),
               "ts": ("'2024-01-05 09:30:00'",), "tstz": ("'2024-01-05 09:30:00'",)}
_INTERVALS = ("INTERVAL '1 minute'", "INTERVAL '5 minutes'", "INTERVAL '7 minutes'",
              "INTERVAL '1 hour'", "INTERVAL '1 day'", "INTERVAL '2 days'", "INTERVAL '7 days'",
              "INTERVAL '1 week'", "INTERVAL '30 seconds'", "INTERVAL 5 MINUTE")
_MULTI_INTERVALS = ("INTERVAL '8 hours 30 minutes'", "INTERVAL '1 day 2 hours'")
_BUCKETS = ("INTERVAL '1 minute'", "INTERVAL '5 minutes'", "INTERVAL '7 minutes'",
            "INTERVAL '1 hour'", "INTERVAL '1 day'", "INTERVAL '2 days'", "INTERVAL '7 days'",
            "INTERVAL '1 week'", "INTERVAL '30 seconds'", "INTERVAL '1 month'")
_PARTS = {"date": ("year", "month", "day", "dow", "isodow", "doy", "week", "quarter"),
          "ts": ("year", "month", "day", "hour", "minute", "second", "millisecond",
                 "microsecond", "dow", "isodow", "doy", "week", "quarter"),
          "time": ("hour", "minute", "second", "millisecond", "microsecond")}
_PARTS["tstz"] = _PARTS["ts"]
_TRUNC = {"ts": ("second", "minute", "hour", "day", "week", "month", "quarter", "year"),
          "date": ("week", "month", "quarter", "year", "day")}
_TRUNC["tstz"] = _TRUNC["ts"]
_LIKE = ("'A%'", "'%b'", "'_'", "'%'", "''", "'%é%'", "'a_b'", "'%B%'", "'a%b'", "'A'")

_UTC = dt.timezone.utc
#: the values bound to ``$n`` parameters (``db.sql(text, params=[...])``), per kind
PARAM_VALUES: dict[str, tuple[Any, ...]] = {
    "int": (0, 1, -1, 7, 2 ** 31 - 1, -(2 ** 31), 2 ** 62, None),
    "float": (0.5, -1.25, 2.5, float("nan"), float("inf"), -0.0, 1e300, None),
    "str": ("", "A", "é", "O'Neil", "a%b", "日本株", None),
    "bool": (True, False, None),
    "date": (dt.date(2024, 1, 5), dt.date(2024, 1, 7), dt.date(1970, 1, 1), None),
    "time": (dt.time(9, 30), dt.time(0, 0), dt.time(23, 59, 59, 999000), None),
    "ts": (dt.datetime(2024, 1, 5, 9, 30), dt.datetime(2000, 1, 3), None),
    "tstz": (dt.datetime(2024, 1, 5, 9, 30, tzinfo=_UTC), dt.datetime(1970, 1, 1, tzinfo=_UTC),
             None),
}

_SQL_TYPE = {"int": "BIGINT", "float": "DOUBLE", "str": "VARCHAR", "date": "DATE", "time": "TIME",
             "ts": "TIMESTAMP", "tstz": "TIMESTAMPTZ", "bool": "BOOLEAN"}

#: tags of aggregate productions (``agg:...``), for the shapes that need one
AGG_TAGS = "agg:"


def literal(rng: random.Random, kind: str) -> str:
    return rng.choice(LITERALS[kind])


@dataclass
class Scope:
    """The columns a query can read: ``(sql reference, kind)``; ``order_key`` is a unique
    non-null column (the tie-breaker of window and first/last orders)."""

    columns: list[tuple[str, str]]
    order_key: str

    def of(self, kind: str) -> list[str]:
        return [c for c, k in self.columns if k == kind]

    def kinds(self) -> list[str]:
        """The kinds present, in a fixed order (never a set's: a seed must name one query
        whatever PYTHONHASHSEED is)."""
        return sorted({k for _, k in self.columns})


Production = tuple[str, int, Callable[[int], str]]


class ExprGen:
    """Expressions of a kind over a :class:`Scope`; ``tags`` collects the constructs used."""

    def __init__(self, rng: random.Random, scope: Scope, *, disabled: frozenset[str] = frozenset()
                 ) -> None:
        self.rng = rng
        self.scope = scope
        self.disabled = disabled
        self.tags: set[str] = set()
        self.params: list[Any] | None = None   # a list: literals may become $n parameters

    # -- helpers ----------------------------------------------------------------------------
    def pick(self, options: list[Production], depth: int) -> str:
        live = [o for o in options if o[0] not in self.disabled]
        if not live:
            raise NoProduction()
        tag, _, build = self.rng.choices(live, [w for _, w, _ in live])[0]
        self.tags.add(tag)
        return build(depth)

    def has(self, kind: str) -> bool:
        return bool(self.scope.of(kind))

    def col(self, kind: str) -> str:
        return self.rng.choice(self.scope.of(kind))

    def lit(self, kind: str) -> str:
        return literal(self.rng, kind)

    def leaf(self, kind: str) -> str:
        """A column of the kind, else a literal (NULL now and then)."""
        if self.has(kind) and self.rng.random() < 0.75:
            return self.col(kind)
        if self.rng.random() < 0.05 and "lit:null" not in self.disabled:
            self.tags.add("lit:null")
            return "NULL" if self.rng.random() < 0.5 else f"CAST(NULL AS {_SQL_TYPE[kind]})"
        if self.params is not None and self.rng.random() < 0.5:
            self.tags.add("param")
            self.params.append(self.rng.choice(PARAM_VALUES[kind]))
            return f"${len(self.params)}"
        return self.lit(kind)

    def num(self, depth: int) -> str:
        return self.expr(self.rng.choice(("int", "float")), depth)

    def expr(self, kind: str, depth: int = 2) -> str:
        if depth <= 0 or self.rng.random() < 0.3:
            return self.leaf(kind)
        d = depth - 1
        try:
            return self.pick(getattr(self, f"_{kind}")(), d)
        except NoProduction:
            return self.leaf(kind)

    def generic(self, kind: str) -> list[Production]:
        """Productions every kind has: CASE, COALESCE, NULLIF, GREATEST/LEAST."""
        e = self.expr
        out: list[Production] = [
            ("case", 2, lambda d: f"CASE WHEN {e('bool', d)} THEN {e(kind, d)} "
                                  f"ELSE {e(kind, d)} END"),
            ("case_simple", 1, lambda d: f"CASE {e(kind, d)} WHEN {self.lit(kind)} THEN "
                                         f"{e(kind, d)} END"),
            ("fn:coalesce", 2, lambda d: f"coalesce({e(kind, d)}, {e(kind, d)})"),
            ("fn:nullif", 1, lambda d: f"nullif({e(kind, d)}, {e(kind, d)})"),
        ]
        if kind != "bool":
            out += [("fn:greatest", 1, lambda d: f"greatest({e(kind, d)}, {e(kind, d)})"),
                    ("fn:least", 1, lambda d: f"least({e(kind, d)}, {e(kind, d)})")]
        return out

    # -- per kind -----------------------------------------------------------------------------
    def _int(self) -> list[Production]:
        e, r = self.expr, self.rng
        temporal = [k for k in ("date", "ts", "tstz", "time") if self.has(k)]
        out: list[Production] = [
            ("op:add", 3, lambda d: f"({e('int', d)} + {e('int', d)})"),
            ("op:sub", 3, lambda d: f"({e('int', d)} - {e('int', d)})"),
            ("op:mul", 2, lambda d: f"({e('int', d)} * {e('int', d)})"),
            ("op:intdiv", 1, lambda d: f"({e('int', d)} // {e('int', d)})"),
            ("op:mod", 1, lambda d: f"({e('int', d)} % {e('int', d)})"),
            ("op:neg", 1, lambda d: f"(- {e('int', d)})"),
            ("fn:abs", 1, lambda d: f"abs({e('int', d)})"),
            ("fn:sign", 1, lambda d: f"sign({self.num(d)})"),
            ("fn:length", 1, lambda d: f"length({e('str', d)})"),
            ("fn:strpos", 1, lambda d: f"strpos({e('str', d)}, {self.lit('str')})"),
            ("cast:float_int", 1, lambda d: f"CAST({e('float', d)} AS BIGINT)"),
            ("cast:bool_int", 1, lambda d: f"CAST({e('bool', d)} AS INTEGER)"),
            ("fn:round_int", 1, lambda d: f"round({e('int', d)})"),
        ] + self.generic("int")
        if temporal:
            def extract(d: int) -> str:
                k = r.choice(temporal)
                return f"EXTRACT({r.choice(_PARTS[k])} FROM {e(k, d)})"

            def date_part(d: int) -> str:
                k = r.choice(temporal)
                return f"date_part('{r.choice(_PARTS[k])}', {e(k, d)})"

            def named(d: int) -> str:
                k = r.choice(temporal)
                part = r.choice([p for p in ("year", "month", "day", "hour", "minute",
                                             "second", "dayofweek")
                                 if p in _PARTS[k] or (p == "dayofweek" and k != "time")])
                return f"{part}({e(k, d)})"
            out += [("fn:extract", 3, extract), ("fn:date_part", 1, date_part),
                    ("fn:year_etc", 1, named)]
        if self.has("date"):
            out.append(("op:date_diff", 1, lambda d: f"({e('date', d)} - {e('date', d)})"))
        return out

    def _float(self) -> list[Production]:
        e, r = self.expr, self.rng
        n = self.num
        out: list[Production] = [
            ("op:fadd", 3, lambda d: f"({e('float', d)} + {n(d)})"),
            ("op:fsub", 2, lambda d: f"({n(d)} - {e('float', d)})"),
            ("op:fmul", 2, lambda d: f"({e('float', d)} * {n(d)})"),
            ("op:div", 3, lambda d: f"({n(d)} / {n(d)})"),
            ("op:fneg", 1, lambda d: f"(- {e('float', d)})"),
            ("fn:fabs", 1, lambda d: f"abs({e('float', d)})"),
            ("fn:sqrt", 1, lambda d: f"sqrt({n(d)})"),
            ("fn:ln", 1, lambda d: f"ln({n(d)})"),
            ("fn:log10", 1, lambda d: f"log10({n(d)})"),
            ("fn:log", 1, lambda d: f"log({n(d)})"),
            ("fn:exp", 1, lambda d: f"exp({n(d)})"),
            ("fn:pow", 1, lambda d: f"{r.choice(('pow', 'power'))}({n(d)}, {n(d)})"),
            ("fn:floor", 1, lambda d: f"floor({e('float', d)})"),
            ("fn:ceil", 1, lambda d: f"{r.choice(('ceil', 'ceiling'))}({e('float', d)})"),
            ("fn:round", 2, lambda d: f"round({e('float', d)})"),
            ("fn:round_digits", 2, lambda d: f"round({e('float', d)}, "
                                             f"{r.choice(('0', '1', '2', '-1'))})"),
            ("cast:int_double", 1, lambda d: f"CAST({e('int', d)} AS DOUBLE)"),
            ("cast:str_double", 1, lambda d: f"CAST({r.choice(_FLOAT_STRINGS)} AS DOUBLE)"),
        ] + self.generic("float")
        ts = [k for k in ("ts", "tstz") if self.has(k)]
        if ts:
            out += [("fn:epoch", 1, lambda d: f"epoch({e(r.choice(ts), d)})"),
                    ("fn:extract_epoch", 1,
                     lambda d: f"EXTRACT(epoch FROM {e(r.choice(ts), d)})")]
        return out

    def _bool(self) -> list[Production]:
        e, r = self.expr, self.rng
        kinds = [k for k in _ORDERABLE if self.has(k)] or ["int"]

        def cmp(d: int) -> str:
            k = r.choice(kinds)
            op = r.choice(("=", "<>", "<", "<=", ">", ">=", "!="))
            right = e(k, d) if r.random() < 0.5 else self.lit(k)
            return f"({e(k, d)} {op} {right})"

        def cmp_mixed_instants(d: int) -> str:
            # a DATETIME (TIMESTAMPTZ) column against TIMESTAMP literals (issue 24, item 10)
            if not self.has("tstz"):
                return cmp(d)
            other = r.choice(_TS_LITS + _INFINITE)
            return f"({self.col('tstz')} {r.choice(('=', '<', '>=', '<>'))} {other})"

        def cmp_decimal(d: int) -> str:
            a, b, c = (r.choice(("0.1", "0.2", "0.3", "1.1", "2.2", "3.3")) for _ in range(3))
            return f"(({a} + {b}) {r.choice(('=', '<', '>='))} {c})"

        def cmp_string_lit(d: int) -> str:
            ks = [k for k in ("date", "time", "ts", "tstz") if self.has(k)]
            if not ks:
                return cmp(d)
            k = r.choice(ks)
            return f"({self.col(k)} {r.choice(('=', '<', '>=', '<>'))} " \
                   f"{r.choice(_STRING_FOR[k])})"

        def between(d: int) -> str:
            k = r.choice(kinds)
            neg = "NOT " if r.random() < 0.3 else ""
            return f"({e(k, d)} {neg}BETWEEN {self.leaf(k)} AND {self.leaf(k)})"

        def in_list(d: int, negate: bool) -> str:
            k = r.choice(kinds)
            items = [self.lit(k) for _ in range(r.randint(1, 4))]
            if r.random() < 0.3:
                items.append("NULL")
            return f"({e(k, d)} {'NOT ' if negate else ''}IN ({', '.join(items)}))"

        def like(d: int, op: str) -> str:
            neg = "NOT " if r.random() < 0.3 else ""
            return f"({e('str', d)} {neg}{op} {r.choice(_LIKE)})"

        def distinct(d: int) -> str:
            k = r.choice(kinds)
            neg = "NOT " if r.random() < 0.5 else ""
            return f"({e(k, d)} IS {neg}DISTINCT FROM {e(k, d)})"

        def null_test(d: int) -> str:
            k = r.choice(kinds)
            return f"({e(k, d)} IS {'NOT ' if r.random() < 0.5 else ''}NULL)"

        out: list[Production] = [
            ("cmp", 8, cmp),
            ("cmp:string_literal", 1, cmp_string_lit),
            ("cmp:mixed_instants", 1, cmp_mixed_instants),
            ("cmp:decimal_literals", 1, cmp_decimal),
            ("op:and", 2, lambda d: f"({e('bool', d)} AND {e('bool', d)})"),
            ("op:or", 2, lambda d: f"({e('bool', d)} OR {e('bool', d)})"),
            ("op:not", 2, lambda d: f"(NOT {e('bool', d)})"),
            ("is_null", 2, null_test),
            ("is_distinct", 1, distinct),
            ("between", 1, between),
            ("in_list", 2, lambda d: in_list(d, False)),
            ("not_in_list", 1, lambda d: in_list(d, True)),
            ("like", 1, lambda d: like(d, "LIKE")),
            ("ilike", 1, lambda d: like(d, "ILIKE")),
            ("fn:starts_with", 1, lambda d: f"starts_with({e('str', d)}, {self.lit('str')})"),
            ("fn:contains", 1, lambda d: f"contains({e('str', d)}, {self.lit('str')})"),
            ("fn:isnan", 1, lambda d: f"isnan({e('float', d)})"),
            ("fn:isinf", 1, lambda d: f"isinf({e('float', d)})"),
            ("fn:isfinite", 1, lambda d: f"isfinite({e('float', d)})"),
        ] + self.generic("bool")
        return out

    def _str(self) -> list[Production]:
        e, r = self.expr, self.rng
        out: list[Production] = [
            ("fn:lower", 1, lambda d: f"lower({e('str', d)})"),
            ("fn:upper", 1, lambda d: f"upper({e('str', d)})"),
            ("fn:trim", 1, lambda d: f"{r.choice(('trim', 'ltrim', 'rtrim'))}({e('str', d)})"),
            ("fn:substr", 2, lambda d: f"{r.choice(('substr', 'substring'))}({e('str', d)}, "
                                       f"{r.choice(('-3', '-1', '0', '1', '2', '5'))}"
                                       f"{r.choice(('', ', 0', ', 1', ', 2', ', 10'))})"),
            ("fn:concat", 1, lambda d: f"concat({e('str', d)}, {e('str', d)})"),
            ("op:concat", 1, lambda d: f"({e('str', d)} || {e('str', d)})"),
            ("fn:replace", 1, lambda d: f"replace({e('str', d)}, {self.lit('str')}, "
                                        f"{self.lit('str')})"),
            ("fn:left", 1, lambda d: f"{r.choice(('left', 'right'))}({e('str', d)}, "
                                     f"{r.choice(('0', '1', '2', '-1'))})"),
            ("fn:reverse", 1, lambda d: f"reverse({e('str', d)})"),
            ("cast:int_str", 1, lambda d: f"CAST({e('int', d)} AS VARCHAR)"),
        ] + self.generic("str")
        if self.has("date"):
            out.append(("cast:date_str", 1, lambda d: f"CAST({e('date', d)} AS VARCHAR)"))
        return out

    def _date(self) -> list[Production]:
        e = self.expr
        out: list[Production] = [
            ("op:date_add_int", 1,
             lambda d: f"({e('date', d)} + {self.rng.choice(('1', '-1', '7'))})"),
        ] + self.generic("date")
        ts = [k for k in ("ts", "tstz") if self.has(k)]
        if ts:
            out.append(("cast:ts_date", 2,
                        lambda d: f"CAST({e(self.rng.choice(ts), d)} AS DATE)"))
        out.append(("fn:time_bucket_date", 1,
                    lambda d: f"time_bucket({self.rng.choice(_BUCKETS[4:8])}, {e('date', d)})"))
        return out

    def _time(self) -> list[Production]:
        e = self.expr
        out: list[Production] = [
            ("op:time_add_interval", 1,
             lambda d: f"({e('time', d)} + {self.rng.choice(_INTERVALS[:5])})"),
        ] + self.generic("time")
        if self.has("ts"):   # DuckDB casts no TIMESTAMPTZ to TIME
            out.append(("cast:ts_time", 2, lambda d: f"CAST({e('ts', d)} AS TIME)"))
        return out

    def _ts(self) -> list[Production]:
        return self._instant("ts")

    def _tstz(self) -> list[Production]:
        return self._instant("tstz")

    def _instant(self, kind: str) -> list[Production]:
        e, r = self.expr, self.rng

        def bucket(d: int, origin: bool) -> str:
            width = r.choice(_BUCKETS)
            org = ""
            if origin:
                org = ", " + (r.choice(_TS_LITS) if kind == "ts" else r.choice(_TSTZ_LITS))
            return f"time_bucket({width}, {e(kind, d)}{org})"

        out: list[Production] = [
            ("op:ts_add_interval", 2,
             lambda d: f"({e(kind, d)} {r.choice(('+', '-'))} {r.choice(_INTERVALS)})"),
            ("op:ts_add_multi_interval", 1,
             lambda d: f"({e(kind, d)} + {r.choice(_MULTI_INTERVALS)})"),
            ("fn:date_trunc", 2, lambda d: f"date_trunc('{r.choice(_TRUNC[kind])}', "
                                           f"{e(kind, d)})"),
            ("fn:time_bucket", 2, lambda d: bucket(d, False)),
            ("fn:time_bucket_origin", 1, lambda d: bucket(d, True)),
        ] + self.generic(kind)
        if kind == "ts" and self.has("date"):
            out.append(("cast:date_ts", 1, lambda d: f"CAST({e('date', d)} AS TIMESTAMP)"))
            if self.has("time"):
                out.append(("op:date_plus_time", 1,
                            lambda d: f"({self.col('date')} + {self.col('time')})"))
        return out

    # -- aggregates -------------------------------------------------------------------------
    def agg(self, kind: str, depth: int = 1) -> str:
        """An aggregate call whose result has ``kind``, over row expressions of the scope."""
        return self.pick(self._aggs(kind), depth)

    def _aggs(self, kind: str) -> list[Production]:
        e, r = self.expr, self.rng
        key = self.scope.order_key
        # arg_min/arg_max keys: the unique order key, also as a DOUBLE (another code path)
        by = r.choice((key, key, f"CAST({key} AS DOUBLE)", f"-CAST({key} AS DOUBLE)"))
        kinds = [k for k in _ORDERABLE if self.has(k) and k != "bool"] or ["int"]

        def ordered(fn: str, d: int, k: str) -> str:
            k2 = r.choice(kinds)
            desc = r.choice(("", " DESC"))
            return f"{fn}({e(k, d)} ORDER BY {self.col(k2) if self.has(k2) else key}{desc}, " \
                   f"{key}{desc})"

        def filtered(d: int, k: str) -> str:
            inner = self.agg(k, d)
            if inner.startswith(("count", "sum", "min", "max", "avg")):
                return f"{inner} FILTER (WHERE {e('bool', d)})"
            return inner

        if kind == "int":
            return [
                ("agg:count_star", 3, lambda d: "count(*)"),
                ("agg:count", 2, lambda d: f"count({e(r.choice(kinds), d)})"),
                ("agg:count_lit", 1, lambda d: f"count({r.choice(('1', '0', '2', 'NULL'))})"),
                ("agg:count_distinct", 1, lambda d: f"count(DISTINCT {e(r.choice(kinds), d)})"),
                ("agg:sum_int", 3, lambda d: f"sum({e('int', d)})"),
                ("agg:sum_lit", 1, lambda d: f"sum({r.choice(('1', '2'))})"),
                ("agg:min_int", 2, lambda d: f"{r.choice(('min', 'max'))}({e('int', d)})"),
                ("agg:arg_min", 1, lambda d: f"{r.choice(('arg_min', 'arg_max'))}"
                                             f"({e('int', d)}, {by})"),
                ("agg:first_order", 1, lambda d: ordered(r.choice(("first", "last")), d, "int")),
                ("agg:quantile_disc", 1, lambda d: f"quantile_disc({e('int', d)}, "
                                                   f"{r.choice(('0.5', '0.25', '0.9', '0'))})"),
                ("agg:count_if", 1, lambda d: f"count_if({e('bool', d)})"),
                ("agg:filter", 1, lambda d: filtered(d, "int")),
            ]
        if kind == "float":
            n = self.num
            return [
                ("agg:sum_float", 3, lambda d: f"sum({e('float', d)})"),
                ("agg:avg", 3, lambda d: f"avg({n(d)})"),
                ("agg:max_float", 2, lambda d: f"{r.choice(('min', 'max'))}({e('float', d)})"),
                ("agg:stddev", 1, lambda d: f"{r.choice(('stddev_samp', 'stddev_pop', 'stddev'))}"
                                            f"({n(d)})"),
                ("agg:var", 1, lambda d: f"{r.choice(('var_samp', 'var_pop', 'variance'))}"
                                         f"({n(d)})"),
                ("agg:median", 1, lambda d: f"median({n(d)})"),
                ("agg:quantile_cont", 1, lambda d: f"quantile_cont({n(d)}, "
                                                   f"{r.choice(('0.5', '0.25', '0.9', '1'))})"),
                ("agg:percentile_cont", 1,
                 lambda d: f"percentile_cont({r.choice(('0.5', '0.9'))}) WITHIN GROUP "
                           f"(ORDER BY {n(d)})"),
                ("agg:corr", 1, lambda d: f"{r.choice(('corr', 'covar_pop', 'covar_samp'))}"
                                          f"({n(d)}, {n(d)})"),
                ("agg:regr", 1, lambda d: f"{r.choice(('regr_slope', 'regr_intercept'))}"
                                          f"({n(d)}, {n(d)})"),
                ("agg:weighted_avg", 1, lambda d: f"weighted_avg({n(d)}, {n(d)})"),
                ("agg:first_order", 1, lambda d: ordered(r.choice(("first", "last")), d,
                                                         "float")),
                ("agg:arg_min", 1, lambda d: f"{r.choice(('arg_min', 'arg_max'))}"
                                             f"({e('float', d)}, {by})"),
                ("agg:filter", 1, lambda d: filtered(d, "float")),
            ]
        if kind == "bool":
            return [("agg:bool_and", 1, lambda d: f"{r.choice(('bool_and', 'bool_or'))}"
                                                  f"({e('bool', d)})")]
        out: list[Production] = [
            ("agg:min_other", 2, lambda d: f"{r.choice(('min', 'max'))}({e(kind, d)})"),
            ("agg:first_order", 1, lambda d: ordered(r.choice(("first", "last")), d, kind)),
            ("agg:arg_min", 1, lambda d: f"{r.choice(('arg_min', 'arg_max'))}"
                                         f"({e(kind, d)}, {by})"),
        ]
        if kind == "str":
            out.append(("agg:string_agg", 1,
                        lambda d: f"string_agg({e('str', d)}, ',' ORDER BY {key})"))
        return out

    def agg_expr(self, kind: str, depth: int = 1) -> str:
        """An aggregate, sometimes inside row-level arithmetic (``sum(x) + 1``)."""
        a = self.agg(kind, depth)
        if kind in ("int", "float") and self.rng.random() < 0.2:
            self.tags.add("agg:arith")
            return f"({a} {self.rng.choice(('+', '*', '-'))} {self.lit('int')})"
        return a


class NoProduction(Exception):
    """Every production of a kind is switched off."""
