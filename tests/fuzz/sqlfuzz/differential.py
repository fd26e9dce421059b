"""One query through hfq and DuckDB on the same rows, and what came of it.

Outcomes (:class:`Outcome.status`):

* ``same``      -- equal answers (:func:`sqlfuzz.compare.differ`).
* ``unstable``  -- the answers differ, but DuckDB disagrees with itself: run on another order of
  the same rows (reversed, shuffled, sorted by a float column; then, if the answers still
  differ, 24 more shuffles) DuckDB gives another answer,
  and hfq's answer differs from DuckDB's only in cells where DuckDB's own answers differ
  from each other (:func:`_moving_rows`).  The exact answer does not depend on the row
  order, so DuckDB's floating-point evaluation is showing its rounding (a sum of 1e300, 1 and
  -1e300; a Welford variance of ill-conditioned values, finding F59): there is no single
  answer to agree with.  Not a mismatch; counted and listed apart.  (A thread count other
  than 1 changed nothing on these small tables: the rows are what moves DuckDB's answer.)
* ``plan_error`` -- DuckDB raised at run time, hfq answered, and DuckDB with its optimizer off
  (``PRAGMA disable_optimizer``: every filter evaluated where the statement writes it) answers
  exactly as hfq: DuckDB's error came from rows its optimized plan evaluates before a join or
  filter drops them (the SQL standard leaves whether such an "inessential" evaluation raises
  to the implementation).  Not a mismatch; counted and listed apart.  When unoptimized DuckDB
  raises too (a CTE's CAST over every row, filtered afterwards), it stays ``answered_error``.
  The other way round too: hfq's data raised (a CTE's items are evaluated on all its rows,
  finding F93), DuckDB answered, and DuckDB with its optimizer off raises as well (its plan
  pushed the outer filter below the CTE's items).
* ``plan_answer`` -- the answers differ on a statement with an ASOF JOIN, and DuckDB with its
  ASOF operator forced (``SET asof_loop_join_threshold = 0``) answers exactly as hfq: DuckDB
  disagrees with itself.  For a left side of up to 64 rows DuckDB plans the ASOF JOIN as a
  nested-loop join and ``arg_max_null``, which for some key types (TIME, TIMESTAMP_NS,
  SMALLINT, DECIMAL) returns the right side's -0.0 as 0.0: ``1 / u.x`` is +inf there, -inf
  in its ASOF operator and in hfq.  Only when DuckDB's two answers differ in the signs of
  floats alone (what a lost -0.0 changes); any other difference between them stays
  ``wrong``.  Not a mismatch; counted and listed apart.  And for any statement: the answers
  differ, and DuckDB with its optimizer off answers exactly as hfq (:func:`_optimizer_moved`):
  its optimizer rewrites an avg without GROUP BY into the sum rounded to a DOUBLE over the
  count, an ulp from its avg state's long-double division (F142).
* ``near_tie`` -- under ORDER BY ... LIMIT/OFFSET the limited answers differ because rows an
  ulp apart in a float sort key stand otherwise (:func:`_near_tie_slice`): on the statement
  without its LIMIT/OFFSET the whole answers differ only by such swaps, hfq's stands in the
  ORDER BY's order by its own values and its limited answer is its slice.  Not a mismatch;
  counted and listed apart.
* ``refused``   -- hfq raised an :class:`~hfq.errors.HfqError` where DuckDB answered: not a
  mismatch, counted by the construct the message names (:func:`construct`); ``leaked`` when
  that message is in polars' words (:func:`polars_words`: a plan, or a polars message such as
  "`neg` operation not supported for dtype": the compiler failed inside rather than refused
  by name).  Not a mismatch, but a defect all the same: every error of hfq in polars' words,
  whatever DuckDB did, is also flagged (:attr:`Outcome.leak`) and counted apart by the
  campaign and the long run's report.
* ``agreed_error`` -- DuckDB raised at run time (overflow, a failed cast, division by zero) and
  hfq raised an HfqError too.
* ``invalid``   -- DuckDB refused to parse or bind the text (or a cast it does not implement):
  a query outside the dialect (the grammar's own miss), not held against hfq.
* ``widened``   -- DuckDB overflowed a 32-bit integer (``2147483647 + 1``: its integer literals
  are INTEGER) where hfq computes in 64 bits by design (``docs/sql.md``).
* mismatches: ``wrong`` (different answers), ``crash`` (hfq raised anything but an HfqError),
  ``answered_error`` (DuckDB raised at run time, hfq answered).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

import hfq
from hfq.errors import HfqError, SqlError
from sqlfuzz.compare import Answer, _close, answer_from_arrow, answer_from_polars, differ

__all__ = ["APART", "MISMATCHES", "Outcome", "construct", "duckdb_text", "order_keys",
           "polars_words", "run_duckdb", "run_hfq", "run_query"]

MISMATCHES = ("wrong", "crash", "answered_error")
#: differences that are DuckDB's own instability, counted and listed apart
APART = ("unstable", "plan_error", "plan_answer", "near_tie")
_ASOF = re.compile(r"\bASOF\b", re.IGNORECASE)
#: DuckDB's errors that mean "not this dialect": the text is wrong, not the data
_INVALID = (duckdb.BinderException, duckdb.ParserException, duckdb.CatalogException,
            duckdb.NotImplementedException, duckdb.SyntaxException,
            duckdb.TypeMismatchException)
#: DuckDB's overflow of a 32/16/8-bit integer (its literals are INTEGER): hfq computes in 64
#: bits by design, so this error is not a difference (counted as ``widened``)
#: (``abs`` of the narrow type's minimum, and its division by -1, say only the values)
_NARROW = re.compile(r"Overflow in \w+ of (INT32|INT16|INT8)\b|"
                     r"Overflow on abs\((-2147483648|-32768|-128)\)|"
                     r"Overflow in division of (-2147483648|-32768|-128) / -1\b")


#: polars' own words in an error message -- a plan quoted (``col("x")``, ``.alias(``...) or
#: one of polars' messages: the compiler failed inside, it did not refuse by name
_POLARS = re.compile(
    r"col\(\"|\.alias\(|strict_cast|dyn (int|float)|\.when\(|conversion from `|supertype of|"
    r"invalid series dtype|operation not supported for dtype|dtype \w+ not supported in|"
    r"not supported for dtype|could not deserialize|multiple fields with name|"
    r"doesn't match the DataFrame height|must be a scalar value|filter predicate must be of "
    r"type|is incompatible with|group_by keys contained|It's possible that|If you want "
    r"expression|unable to find column|cannot compare|failed to determine|\(expected: |"
    r"lengths don't match|cannot be broadcast|Resolved plan until failure|ShapeError|"
    r"ComputeError|InvalidOperationError|SchemaError|ColumnNotFoundError|ArrowInvalid|"
    r"ArrowTypeError")


def polars_words(text: str) -> bool:
    """Does an error message of hfq carry polars' (or pyarrow's) own words?"""
    return _POLARS.search(text) is not None


@dataclass
class Outcome:
    status: str
    detail: str = ""
    hfq: Answer | None = None
    duck: Answer | None = None
    error: str = ""
    leak: str = ""   # hfq's error in polars' words: the construct it names (else "")

    @property
    def mismatch(self) -> bool:
        return self.status in MISMATCHES


_AT_VERSION = re.compile(r"\b(\w+) AT \(VERSION => (\d+)\)", re.I)


def duckdb_text(sql: str) -> str:
    """The statement for DuckDB: a table read at a version (``t AT (VERSION => 2)``, hfq's
    time travel) becomes the table DuckDB holds for that version (``t_v2``, see
    :func:`sqlfuzz.data.load_duckdb`)."""
    return _AT_VERSION.sub(lambda m: f"{m.group(1)}_v{m.group(2)}", sql)


def run_duckdb(con: duckdb.DuckDBPyConnection, sql: str,
               params: tuple[Any, ...] = ()) -> Answer | BaseException:
    try:
        rel = con.sql(duckdb_text(sql), params=list(params)) if params else \
            con.sql(duckdb_text(sql))
        return answer_from_arrow(rel.to_arrow_table())
    except duckdb.Error as exc:
        return exc


def run_hfq(db: hfq.Database, sql: str, params: tuple[Any, ...] = ()
            ) -> Answer | BaseException:
    try:
        query = db.sql(sql, params=list(params)) if params else db.sql(sql)
        return answer_from_polars(query.collect())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - a panic or TypeError is a finding
        return exc


def construct(exc: BaseException) -> str:
    """What an hfq refusal names: the construct after "unsupported SQL:", else the message's
    first words, without positions or quoted values."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = re.sub(r"\s*\(line \d+, column \d+\)", "", text)
    m = re.match(r"unsupported SQL: (.*)", text)
    if m:
        text = m.group(1)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "…", text)
    text = re.sub(r"\d+", "N", text)
    return text[:70]


def classify(got: Answer | BaseException, want: Answer | BaseException, *, ordered: bool,
             others: list[Answer | BaseException] = (),  # type: ignore[assignment]
             keys: list[int] | None = None) -> Outcome:
    """The outcome of hfq's ``got`` against DuckDB's ``want`` (``others``: DuckDB's answers on
    other orders of the rows, tried when the answers differ; ``keys``: the ORDER BY's output
    columns)."""
    out = _classify(got, want, ordered=ordered, others=others, keys=keys)
    if isinstance(got, HfqError) and polars_words(str(got)):
        out.leak = construct(got)
    return out


def _classify(got: Answer | BaseException, want: Answer | BaseException, *, ordered: bool,
              others: list[Answer | BaseException], keys: list[int] | None) -> Outcome:
    if isinstance(want, _INVALID) or (isinstance(want, duckdb.ConversionException) and
                                      "Unimplemented type for cast" in str(want)):
        return Outcome("invalid", type(want).__name__, error=_line(want))
    if isinstance(want, duckdb.OutOfRangeException) and _NARROW.search(str(want)):
        return Outcome("widened", _line(want))
    if isinstance(want, BaseException):
        if isinstance(got, HfqError):
            return Outcome("agreed_error", construct(got), error=_line(want))
        if isinstance(got, BaseException):
            return Outcome("crash", f"{type(got).__name__}: {_line(got)}", error=_line(got))
        return Outcome("answered_error", f"DuckDB: {_line(want)}", hfq=got)
    if isinstance(got, HfqError):
        status = "leaked" if polars_words(str(got)) else "refused"
        return Outcome(status, construct(got), duck=want, error=_line(got))
    if isinstance(got, BaseException):
        return Outcome("crash", f"{type(got).__name__}: {_line(got)}", duck=want,
                       error=_line(got))
    why = differ(got, want, ordered=ordered, keys=keys)
    if why is None:
        return Outcome("same", hfq=got, duck=want)
    moving: set[int] = set()   # the columns where DuckDB's answers differ from each other
    for other in others:
        if isinstance(other, Answer) and differ(other, want, ordered=ordered,
                                                keys=keys) is not None:
            moving |= _columns_apart(other, want)
    if moving:
        answers = [o for o in others if isinstance(o, Answer)]
        if not _moving_rows(got, want, answers, moving) and not any(
                differ(got, o, ordered=ordered, keys=keys) is None for o in answers):
            return Outcome("wrong", f"{why} (DuckDB's answer moves with the row order, but "
                           "not in the rows where hfq differs)", hfq=got, duck=want)
        return Outcome("unstable", f"DuckDB's answer moves with the row order (columns "
                       f"{sorted(c + 1 for c in moving)}): {why}", hfq=got, duck=want)
    return Outcome("wrong", why, hfq=got, duck=want)


def _moving_rows(got: Answer, want: Answer, others: list[Answer], moving: set[int]) -> bool:
    """Whether hfq's rows differ from DuckDB's only in cells where DuckDB's own answers
    differ: each of hfq's rows is paired with a row of DuckDB's equal outside the ``moving``
    columns, and so is that row with one of each other answer; a cell where hfq differs must
    differ on some other order too.  A column that moves for one group does not excuse
    another group whose value DuckDB gives the same on every order (seed 103, dataset
    103510: corr NaN in hfq, -0.0 in DuckDB on all 9 orders)."""
    if len(got.rows) != len(want.rows) or len(got.kinds) != len(want.kinds):
        return False   # a shape hfq shares with another order's answer is judged by the caller
    keep = [i for i in range(len(want.kinds)) if i not in moving]
    narrow = [x or y for x, y in zip(got.narrow, want.narrow)]

    def pair(rows: list[tuple[Any, ...]], into: list[tuple[Any, ...]]) -> list[int] | None:
        pending, out = list(range(len(into))), []
        for r in rows:
            j = next((j for j in pending
                      if all(_close(r[i], into[j][i], narrow[i]) for i in keep)), None)
            if j is None:
                return None
            pending.remove(j)
            out.append(j)
        return out

    mine = pair(got.rows, want.rows)
    if mine is None:
        return False
    alike = [o for o in others if o.kinds == want.kinds and len(o.rows) == len(want.rows)]
    theirs = [(o, pair(want.rows, o.rows)) for o in alike]
    for g, j in zip(got.rows, mine):
        w = want.rows[j]
        apart = {c for c in moving if not _close(g[c], w[c], narrow[c])}
        moved: set[int] = set()
        for o, p in theirs:
            if p is not None:
                r = o.rows[p[j]]
                moved |= {c for c in moving if not _close(r[c], w[c], narrow[c])}
        if not apart <= moved:
            return False
    return True


def _columns_apart(a: Answer, b: Answer) -> set[int]:
    """The columns whose values (as multisets) differ between two answers; every column
    when their shapes differ."""
    if len(a.kinds) != len(b.kinds) or len(a.rows) != len(b.rows):
        return set(range(max(len(a.kinds), len(b.kinds))))
    out = set()
    for c in range(len(a.kinds)):
        one = [Answer([n], [k], [(r[c],) for r in x.rows], [w])
               for x, n, k, w in ((a, a.names[c], a.kinds[c], a.narrow[c]),
                                  (b, b.names[c], b.kinds[c], b.narrow[c]))]
        if differ(one[0], one[1], ordered=False) is not None:
            out.add(c)
    return out


def order_keys(sql: str) -> list[int | None] | None:
    """The output columns the statement's ORDER BY names (by name, position or the same
    expression), in its order (None for a term that names none); None without an ORDER
    BY."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return None
    order = tree.args.get("order")
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if order is None or not isinstance(select, exp.Select):
        return None
    items = select.expressions
    if any(isinstance(e, exp.Star) or isinstance(getattr(e, "this", None), exp.Star)
           for e in items):
        return None
    names = [e.alias_or_name for e in items]
    keys: list[int | None] = []
    for o in order.expressions:
        e = o.this
        if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
            keys.append(int(e.this) - 1)
        elif isinstance(e, exp.Column) and not e.table and e.name in names:
            keys.append(names.index(e.name))
        else:
            same = [i for i, item in enumerate(items)
                    if (item.this if isinstance(item, exp.Alias) else item) == e]
            keys.append(same[0] if same else None)
    return keys


def run_query(db: hfq.Database, cons: list[duckdb.DuckDBPyConnection], sql: str, *,
              ordered: bool, params: tuple[Any, ...] = (),
              more: Callable[[], list[duckdb.DuckDBPyConnection]] | None = None) -> Outcome:
    """``sql`` (with bound ``params`` for its ``$n`` placeholders) on hfq and on DuckDB
    (``cons[0]``: the stored order of the rows; the others, other orders, consulted only when
    the answers differ; ``cons[0]`` without its optimizer when DuckDB alone raised, or when
    the answers differ; ``more()``: yet more orders -- shuffles -- consulted when the
    answers still differ as ``wrong``)."""
    out = _run_query(db, cons, sql, ordered=ordered, params=params)
    if out.status == "wrong" and more is not None:
        # a float that moves with the row order may take hfq's value on few orders: DuckDB's
        # corr(id, id) over six ids is 1.0 on 102 of their 720 orders (F140)
        # (hfq's answer is the one judged: not asked again)
        again = _run_query(db, cons + more(), sql, ordered=ordered, params=params,
                           asked=out.hfq)
        if again.status != "wrong":
            return again
    return out


def on_both_engines(db: hfq.Database, cons: list[duckdb.DuckDBPyConnection], sql: str, *,
                    ordered: bool, params: tuple[Any, ...] = ()) -> list[Outcome]:
    """``run_query`` twice: as a small table's plans run (the fast path, the node stage and
    the driver stage on polars' in-memory engine, under ``ops.STREAM_ROWS`` rows), then
    with it (and ``ops.SHARED_ROWS`` and ``ops.RUN_ROWS``) at 0, as a big table's plans run
    (the fast path and the driver on polars' default, streaming engine, the node stage's
    groupings on it or over runs of keys of any length, the
    choices made only over many rows made here too -- whose bugs,
    ``max_by`` on tied keys, one-row ``sqrt``, supertypes, hfq works around: F87, F94b,
    F132i; with small tables alone, a test never reaches them)."""
    from hfq.engine import ops, runagg
    outs = [run_query(db, cons, sql, ordered=ordered, params=params)]
    saved = ops.STREAM_ROWS, ops.SHARED_ROWS, ops.RUN_ROWS, runagg.RUN_SHARE, \
        runagg.MAX_INPUTS
    ops.STREAM_ROWS = ops.SHARED_ROWS = ops.RUN_ROWS = 0
    runagg.RUN_SHARE, runagg.MAX_INPUTS = 1, 100
    try:
        outs.append(run_query(db, cons, sql, ordered=ordered, params=params))
    finally:
        (ops.STREAM_ROWS, ops.SHARED_ROWS, ops.RUN_ROWS, runagg.RUN_SHARE,
         runagg.MAX_INPUTS) = saved
    return outs


def _run_query(db: hfq.Database, cons: list[duckdb.DuckDBPyConnection], sql: str, *,
               ordered: bool, params: tuple[Any, ...], asked: Answer | None = None
               ) -> Outcome:
    want = run_duckdb(cons[0], sql, params)
    got = run_hfq(db, sql, params) if asked is None else asked
    # the ORDER BY's columns only relax the comparison (rows an ulp apart in a float key may
    # swap): read from the text (a parse) only when the answers differ without them
    out = classify(got, want, ordered=ordered)
    keys = _order_columns(sql) if ordered and out.status in ("wrong", "answered_error") \
        else None
    if keys is not None and out.status == "wrong":
        out = classify(got, want, ordered=ordered, keys=keys)
        if out.status == "wrong" and isinstance(got, Answer):
            out = _near_tie_slice(db, cons[0], sql, params, got, out, keys)
    if out.status == "wrong" and len(cons) > 1:
        others = [run_duckdb(c, sql, params) for c in cons[1:]]
        out = classify(got, want, ordered=ordered, others=others, keys=keys)
        if out.status == "wrong" and isinstance(got, Answer):
            out = _limited(db, cons, sql, params, got, out)
        if out.status == "wrong" and isinstance(got, Answer):
            out = _alone(cons, sql, params, got, out)
        if out.status == "wrong" and isinstance(got, Answer):
            out = _qualify_alone(cons, sql, params, got, out)
    if out.status == "wrong" and isinstance(got, Answer) and _ASOF.search(sql):
        operator = _asof_operator(cons[0], sql, params)
        if isinstance(operator, Answer) and differ(got, operator, ordered=ordered,
                                                   keys=keys) is None and \
                isinstance(want, Answer) and differ(_unsigned(want), _unsigned(operator),
                                                    ordered=ordered, keys=keys) is None:
            out = Outcome("plan_answer", f"{out.detail} (DuckDB's ASOF operator answers as "
                          "hfq; its nested-loop rewrite for small inputs does not)", hfq=got,
                          duck=want)
    if out.status == "wrong" and isinstance(got, Answer):
        out = _optimizer_moved(cons[0], sql, params, got, want, out, ordered, keys)
    elif out.status == "answered_error" and isinstance(got, Answer):
        plain = _unoptimized(cons[0], sql, params)
        if isinstance(plain, Answer) and differ(got, plain, ordered=ordered,
                                                keys=keys) is None:
            out = Outcome("plan_error", f"{out.detail} (DuckDB without its optimizer answers "
                          "as hfq)", hfq=got)
    elif out.status == "refused" and isinstance(got, HfqError) and not isinstance(
            got, SqlError):   # the data raised in hfq (not a construct refused by name)
        plain = _unoptimized(cons[0], sql, params)
        if isinstance(plain, BaseException) and not isinstance(plain, _INVALID):
            out = Outcome("plan_error", f"hfq raised as DuckDB without its optimizer: "
                          f"{_line(plain)} (DuckDB's plan skipped the rows)", duck=want,
                          error=_line(got))
    return out


def _optimizer_moved(con: duckdb.DuckDBPyConnection, sql: str, params: tuple[Any, ...],
                     got: Answer, want: Answer | BaseException, out: Outcome, ordered: bool,
                     keys: list[int] | None) -> Outcome:
    """``plan_answer`` when DuckDB with its optimizer off answers exactly as hfq (so otherwise
    than with it), else ``out``: DuckDB's optimizer rewrites an avg without GROUP BY
    (or beside a sum of the same values) into the sum rounded to a DOUBLE over the count --
    avg(0.1) over three rows is 0.09999999999999999 there, 0.1 in its avg state, which
    divides the DECIMAL's integers in long double (F142)."""
    if not isinstance(want, Answer):
        return out
    plain = _unoptimized(con, sql, params)
    if not isinstance(plain, Answer) or differ(got, plain, ordered=ordered,
                                                keys=keys) is not None:
        return out
    return Outcome("plan_answer", f"{out.detail} (DuckDB without its optimizer answers as "
                   "hfq)", hfq=got, duck=want)


def _without_limit(sql: str) -> tuple[exp.Select, str, int, int | None] | None:
    """A SELECT's tree, its text without LIMIT/OFFSET, the slice's start and length (None:
    to the end); None for another statement, or a bound that is not a row count spelled as
    a number (``LIMIT 10%``, ``WITH TIES``, ``LIMIT $1``)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Select):
        return None
    limit, offset = tree.args.get("limit"), tree.args.get("offset")
    bounds = [b.expression for b in (limit, offset) if b is not None]
    if any(not isinstance(b, exp.Literal) or b.is_string for b in bounds) or (
            limit is not None and any(limit.args.get("limit_options") and
                                      limit.args["limit_options"].args.get(k)
                                      for k in ("percent", "rows", "with_ties"))):
        return None
    try:
        start = int(offset.expression.this) if offset is not None else 0
        count = int(limit.expression.this) if limit is not None else None
    except (AttributeError, TypeError, ValueError):
        return None
    whole = tree.copy()
    whole.set("limit", None)
    whole.set("offset", None)
    return tree, whole.sql("duckdb"), start, count


def _near_tie_slice(db: hfq.Database, con: duckdb.DuckDBPyConnection, sql: str,
                    params: tuple[Any, ...], got: Answer, out: Outcome, keys: list[int]
                    ) -> Outcome:
    """``near_tie`` when an ulp in a float ORDER BY key moved which rows a LIMIT/OFFSET
    keeps, else ``out``: DuckDB's ``avg`` of three copies of log10(2.5) is one ulp above it,
    hfq's is exact, and the row that group sorts to is cut or kept (seed 103, dataset
    103529).  On the statement without its LIMIT/OFFSET (a plain SELECT with numeric bounds):
    the two whole answers must differ in their order alone and only by such near ties
    (:func:`sqlfuzz.compare.differ` with the ORDER BY's columns), hfq's whole answer must
    stand in the ORDER BY's order by its own values, exactly, and hfq's limited answer must
    be exactly its whole answer's slice."""
    parts = _without_limit(sql)
    if parts is None:
        return out
    tree, text, start, count = parts
    order = tree.args.get("order")
    if order is None or (tree.args.get("limit") is None and tree.args.get("offset") is None):
        return out
    if len(keys) != len(order.expressions):
        return out
    terms = [(i, bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
             for i, o in zip(keys, order.expressions)]
    mine, theirs = run_hfq(db, text, params), run_duckdb(con, text, params)
    if not isinstance(mine, Answer) or not isinstance(theirs, Answer) or \
            differ(mine, theirs, ordered=True) is None or \
            differ(mine, theirs, ordered=True, keys=keys) is not None:
        return out   # no swap at all, or more than near ties
    if any(not _in_order(a, b, terms) for a, b in zip(mine.rows, mine.rows[1:])):
        return out   # hfq's whole answer is not sorted by its own values
    end = None if count is None else start + count
    if differ(got, Answer(mine.names, mine.kinds, mine.rows[start:end], mine.narrow),
              ordered=True) is not None:
        return out
    return Outcome("near_tie", f"rows an ulp apart in a float ORDER BY key stand otherwise "
                   f"in the whole answers; {out.detail}", hfq=got, duck=out.duck)


def _limited(db: hfq.Database, cons: list[duckdb.DuckDBPyConnection], sql: str,
             params: tuple[Any, ...], got: Answer, out: Outcome) -> Outcome:
    """``unstable`` for a difference that DuckDB's instability explains row by row, else
    ``out``.  DuckDB's float values move with the row order (a group's sum of 1e300, DBL_MAX
    and -inf is NaN on one order, -inf on another) and two groups may swap their values, so
    no one order's answer is hfq's, and under ORDER BY ... LIMIT which rows are kept moves
    too.  All of (on the statement without its LIMIT/OFFSET): DuckDB's answers on the three
    row orders differ; hfq's rows, without their float columns, are DuckDB's (as a multiset);
    each row of hfq is a row of one of DuckDB's answers (:func:`_row_mix`); and, with an ORDER
    BY, hfq's rows stand in its order (DuckDB's rules: NULLS LAST, NaN above every number)
    and hfq's limited answer is exactly their slice."""
    parts = _without_limit(sql)
    if parts is None:
        return out
    tree, text, start, count = parts
    order, limit, offset = (tree.args.get(k) for k in ("order", "limit", "offset"))
    terms: list[tuple[int, bool, bool]] = []
    if order is not None:
        columns = _order_columns(sql)
        if columns is None or len(columns) != len(order.expressions):
            return out
        terms = [(i, bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
                 for i, o in zip(columns, order.expressions)]
    elif limit is not None or offset is not None:
        return out   # which rows a LIMIT without ORDER BY keeps is open
    if limit is not None or offset is not None:
        mine = run_hfq(db, text, params)
        theirs = [run_duckdb(c, text, params) for c in cons]
    else:
        mine, theirs = got, [out.duck] + [run_duckdb(c, sql, params) for c in cons[1:]]
    if not isinstance(mine, Answer) or not all(isinstance(t, Answer) for t in theirs):
        return out
    if not _row_mix(mine, theirs):   # type: ignore[arg-type]
        return out
    if not all(_in_order(a, b, terms) for a, b in zip(mine.rows, mine.rows[1:])):
        return out
    end = None if count is None else start + count
    part = Answer(mine.names, mine.kinds, mine.rows[start:end], mine.narrow)
    if differ(got, part, ordered=bool(terms)) is not None:
        return out
    return Outcome("unstable", f"each row of hfq is a row of DuckDB on one of the row orders; "
                   f"{out.detail}", hfq=got, duck=out.duck)


def _alone(cons: list[duckdb.DuckDBPyConnection], sql: str, params: tuple[Any, ...],
           got: Answer, out: Outcome) -> Outcome:
    """``unstable`` when DuckDB's value of a column moves with the *other* items of the
    SELECT, else ``out``: an ``OVER ()`` sum of 1e300, -1e300 and small numbers adds in the
    order another window sorted the rows to (fuzz7 7252), so DuckDB answers that column
    otherwise when the statement names it alone.  For ``SELECT id, ...`` (one row per row of
    the table, no ORDER BY, LIMIT, GROUP BY, DISTINCT or QUALIFY): hfq's other columns are
    DuckDB's, and for each column c where hfq differs, DuckDB's ``SELECT id, c`` (same FROM
    and WHERE) differs from its own column c in the whole statement and equals hfq's (id, c)
    on one of the row orders."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return out
    want = out.duck
    if not isinstance(tree, exp.Select) or want is None or any(
            tree.args.get(k) for k in ("order", "limit", "offset", "group", "distinct",
                                       "qualify", "having", "with_")):
        return out
    items = tree.expressions
    first = items[0] if items else None
    if not isinstance(first, exp.Column) or first.name != "id" or len(items) < 3 or any(
            isinstance(i, exp.Star) for i in items):
        return out
    if len(got.kinds) != len(items) or len(got.rows) != len(want.rows):
        return out
    moving = sorted(_columns_apart(got, want) - {0})
    rest = [i for i in range(len(items)) if i not in moving]
    if not moving or differ(_only(got, rest), _only(want, rest), ordered=False) is not None:
        return out
    for c in moving:
        alone = tree.copy()
        alone.set("expressions", [items[0].copy(), items[c].copy()])
        text = alone.sql("duckdb")
        theirs = [run_duckdb(con, text, params) for con in cons]
        if not all(isinstance(t, Answer) for t in theirs):
            return out
        if all(differ(t, _only(want, [0, c]), ordered=False) is None   # type: ignore[arg-type]
               for t in theirs):
            return out   # DuckDB's column does not move with the other items
        if not any(differ(_only(got, [0, c]), t, ordered=False) is None   # type: ignore[arg-type]
                   for t in theirs):
            return out
    return Outcome("unstable", f"DuckDB's columns {[c + 1 for c in moving]} move with the "
                   f"other items of the SELECT (hfq's are DuckDB's for the item alone): "
                   f"{out.detail}", hfq=got, duck=want)


def _qualify_alone(cons: list[duckdb.DuckDBPyConnection], sql: str,
                   params: tuple[Any, ...], got: Answer, out: Outcome) -> Outcome:
    """``unstable`` when which rows DuckDB's QUALIFY keeps moves with the other items of the
    SELECT, else ``out``: a window's ``avg`` over 1.8e308, 1.8e308 and -inf is NaN (NaN > 1
    holds) or -inf (it does not) by the order another window sorted the rows to (fuzz seed
    53, dataset 53118: 0 rows, and 40 with the same statement under ``SELECT count(*)``).
    For ``SELECT id, ... QUALIFY c`` (no ORDER BY, LIMIT, GROUP BY, DISTINCT, HAVING, CTE;
    ``id`` unique): DuckDB's ``SELECT id ... QUALIFY c`` (same FROM and WHERE) keeps other
    rows than the whole statement, hfq keeps the rows it keeps on one of the row orders, and
    hfq's rows are, on one order, DuckDB's rows of the statement without QUALIFY for those
    ids."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError:
        return out
    want = out.duck
    if not isinstance(tree, exp.Select) or want is None or not tree.args.get("qualify") or any(
            tree.args.get(k) for k in ("order", "limit", "offset", "group", "distinct",
                                       "having", "with_")):
        return out
    items = tree.expressions
    if not items or not isinstance(items[0], exp.Column) or items[0].name != "id" or any(
            isinstance(i, exp.Star) for i in items) or len(got.kinds) != len(items):
        return out
    ids = tree.copy()
    ids.set("expressions", [items[0].copy()])
    kept = [run_duckdb(con, ids.sql("duckdb"), params) for con in cons]
    plain = tree.copy()
    plain.set("qualify", None)
    every = [run_duckdb(con, plain.sql("duckdb"), params) for con in cons]
    if not all(isinstance(a, Answer) for a in kept + every):
        return out
    if all(differ(k, _only(want, [0]), ordered=False) is None   # type: ignore[arg-type]
           for k in kept):
        return out   # DuckDB keeps the same rows either way
    mine = _only(got, [0])
    for k, a in zip(kept, every):
        if differ(mine, k, ordered=False) is not None:   # type: ignore[arg-type]
            continue
        names = [r[0] for r in a.rows]   # type: ignore[union-attr]
        if len(set(names)) != len(names):
            return out
        chosen = {r[0] for r in got.rows}
        rows = Answer(a.names, a.kinds, [r for r in a.rows if r[0] in chosen],   # type: ignore
                      a.narrow)   # type: ignore[union-attr]
        if differ(got, rows, ordered=False) is None:
            return Outcome("unstable", "DuckDB's QUALIFY keeps other rows beside the other "
                           "items of the SELECT than with id alone (hfq keeps those, with "
                           f"DuckDB's values): {out.detail}", hfq=got, duck=want)
    return out


def _only(a: Answer, cols: list[int]) -> Answer:
    return Answer([a.names[i] for i in cols], [a.kinds[i] for i in cols],
                  [tuple(r[i] for i in cols) for r in a.rows], [a.narrow[i] for i in cols])


def _row_mix(got: Answer, answers: list[Answer]) -> bool:
    """DuckDB's ``answers`` (on several row orders) differ from each other, hfq's rows
    without the float columns are DuckDB's first answer's, and hfq's rows of each key (their
    non-float values) are, all together, one answer's rows of that key: a row is never
    counted twice (with only float columns, hfq's whole answer must be one of DuckDB's)."""
    want = answers[0]
    if any(len(a.rows) != len(got.rows) or a.kinds != got.kinds for a in answers):
        return False
    if all(differ(a, want, ordered=False) is None for a in answers[1:]):
        return False   # DuckDB agrees with itself: nothing to explain
    fixed = [i for i, k in enumerate(got.kinds) if k != "float"]

    def only(a: Answer, rows: list[tuple[Any, ...]], cols: list[int]) -> Answer:
        return Answer([a.names[i] for i in cols], [a.kinds[i] for i in cols],
                      [tuple(r[i] for i in cols) for r in rows], [a.narrow[i] for i in cols])

    if differ(only(got, got.rows, fixed), only(want, want.rows, fixed),
              ordered=False) is not None:
        return False
    every = list(range(len(got.kinds)))

    def by_key(rows: list[tuple[Any, ...]]) -> dict[tuple[str, ...], list[tuple[Any, ...]]]:
        out: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for r in rows:   # (repr: equal values of two types or spellings never share a key)
            out.setdefault(tuple(f"{type(r[i]).__name__}:{r[i]!r}" for i in fixed),
                           []).append(r)
        return out

    theirs = [by_key(a.rows) for a in answers]
    return all(any(differ(only(got, rows, every), only(a, t.get(k, []), every),
                          ordered=False) is None for a, t in zip(answers, theirs))
               for k, rows in by_key(got.rows).items())


def _in_order(a: tuple[Any, ...], b: tuple[Any, ...],
              terms: list[tuple[int, bool, bool]]) -> bool:
    """Row ``a`` may stand before row ``b`` under ORDER BY ``terms`` (column, descending,
    nulls first)."""
    for i, desc, nulls_first in terms:
        x, y = a[i], b[i]
        if x is None or y is None:
            if x is None and y is None:
                continue
            return (x is None) == nulls_first
        c = _compare(x, y)
        if c:
            return (c < 0) != desc
    return True


def _compare(x: Any, y: Any) -> int:
    """DuckDB's order of two values (NaN above every number, -0.0 equal to 0.0)."""
    nx, ny = isinstance(x, float) and x != x, isinstance(y, float) and y != y
    if nx or ny:
        return int(nx) - int(ny)
    return (x > y) - (x < y)


def _order_columns(sql: str) -> list[int] | None:
    named = order_keys(sql)   # (a term naming no column: no ties)
    return [k for k in named if k is not None] if named and None not in named else None


def _unoptimized(con: duckdb.DuckDBPyConnection, sql: str, params: tuple[Any, ...]
                 ) -> Answer | BaseException:
    """``sql`` on DuckDB with its optimizer off: every expression evaluated where the
    statement writes it (a CTE's items on all its rows)."""
    return _run_with(con, sql, params, "PRAGMA disable_optimizer", "PRAGMA enable_optimizer")


def _run_with(con: duckdb.DuckDBPyConnection, sql: str, params: tuple[Any, ...], on: str,
              off: str) -> Answer | BaseException:
    """``sql`` on DuckDB after the statement ``on``; ``off`` puts the setting back, whatever
    ``sql`` did."""
    con.execute(on)
    try:
        return run_duckdb(con, sql, params)
    finally:
        con.execute(off)


def _unsigned(answer: Answer) -> Answer:
    """``answer`` with every float's sign dropped: two answers equal so differ only in the
    signs of floats (of zeros and infinities, when a -0.0 was read as 0.0)."""
    rows = [tuple(abs(v) if isinstance(v, float) else v for v in row) for row in answer.rows]
    return Answer(answer.names, answer.kinds, rows, answer.narrow)


def _asof_operator(con: duckdb.DuckDBPyConnection, sql: str, params: tuple[Any, ...]
                   ) -> Answer | BaseException:
    """``sql`` on DuckDB with its ASOF JOIN operator whatever the input's size (no rewrite into
    a nested-loop join for a left side of up to ``asof_loop_join_threshold`` rows)."""
    return _run_with(con, sql, params, "SET asof_loop_join_threshold = 0",
                     "RESET asof_loop_join_threshold")


def _line(exc: Any) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
