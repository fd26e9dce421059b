"""numba kernels for the analytics' hot loops, each one pass over plain numpy arrays.

They run inside the node servers on the columns of one partition (zero-copy views of the
cached frame) and release the GIL, so a server's compute threads run them side by side.  Each
has a numpy/polars oracle in ``tests/unit/test_kernels.py``.  Compiled code is cached on the
node's disk (``NUMBA_CACHE_DIR``), so only the first job on a fresh node pays compilation.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

if TYPE_CHECKING:
    import polars as pl

__all__ = ["MINUTES", "FusedOLS", "columns", "floats", "ols_moments", "ols_residuals",
           "spread_minutes", "time_ns"]

MINUTES = 24 * 60
_NS_PER_MINUTE = 60 * 1_000_000_000


def time_ns(series: pl.Series) -> np.ndarray:
    """A polars Time column as int64 nanoseconds since midnight (nulls as -1, which no
    session window contains); zero-copy when there are no nulls."""
    physical = series.to_physical()
    if physical.null_count():
        physical = physical.fill_null(-1)
    return physical.to_numpy()


def floats(series: pl.Series) -> np.ndarray:
    """A numeric polars column as float64 numpy (nulls as NaN, which no comparison passes)."""
    import polars as pl
    if series.dtype != pl.Float64:
        series = series.cast(pl.Float64)
    return series.to_numpy()


@njit(cache=True, nogil=True)
def spread_minutes(time: np.ndarray, bid: np.ndarray, ofr: np.ndarray, lo_ns: int, hi_ns: int,
                   max_ratio: float, sums: np.ndarray, counts: np.ndarray
                   ) -> None:  # pragma: no cover
    """Add ``(ofr - bid) / (ofr + bid) * 2`` of the quotes with ``lo_ns <= time <= hi_ns``,
    ``ofr > bid``, ``bid > 0`` and ``ofr / bid < max_ratio`` to ``sums[minute]`` and count them
    in ``counts[minute]`` (minute of day).  NaN prices fail every comparison."""
    for i in range(time.shape[0]):
        t = time[i]
        b = bid[i]
        o = ofr[i]
        if t >= lo_ns and t <= hi_ns and o > b and b > 0.0 and o / b < max_ratio:
            m = t // _NS_PER_MINUTE
            sums[m] += (o - b) / (o + b) * 2.0
            counts[m] += 1


def columns(frame: pl.DataFrame, exprs: Sequence[pl.Expr], where: pl.Expr | None = None
            ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """``exprs`` evaluated on a polars frame as a tuple of float64 numpy columns (zero-copy
    where polars allows; nulls as NaN), and ``where`` as a boolean mask (nulls False; all
    True without one) -- the inputs of the OLS kernels, with no filtered copy of the rows."""
    if frame.height == 0:   # (constant expressions would give one row of an empty frame)
        empty = np.empty(0)
        empty.flags.writeable = False
        return (empty,) * len(exprs), np.zeros(0, dtype=np.bool_)
    if where is not None:
        exprs = [*exprs, where.fill_null(False).alias("__where")]
    out = frame.select(exprs)
    if out.height != frame.height:
        raise ValueError(f"expressions must give one value per row; got {out.height} for "
                         f"{frame.height} rows")
    cols = [floats(out[:, j]) for j in range(len(exprs) - (where is not None))]
    for c in cols:   # one numba type for the tuple: every column read-only
        c.flags.writeable = False
    mask = (out["__where"].to_numpy() if where is not None
            else np.ones(out.height, dtype=np.bool_))
    return tuple(cols), mask


@njit(cache=True, nogil=True)
def _complete(cols: tuple[np.ndarray, ...], mask: np.ndarray, i: int) -> bool:  # pragma: no cover
    if not mask[i]:
        return False
    for j in range(len(cols)):
        if np.isnan(cols[j][i]):
            return False
    return True


@njit(cache=True, nogil=True)
def ols_moments(cols: tuple[np.ndarray, ...], mask: np.ndarray
                ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """Row count, mean (as ``hi + lo``) and centred cross-products of the columns ``cols``
    (``[x..., y]``) over the rows with ``mask`` set and no NaN -- the state of
    :class:`hfq.reduce.OLSMoments`.  Two passes: the sums, then the products of the
    deviations from that mean (and their sum, ``lo``, which corrects it)."""
    k = len(cols)
    n_rows = cols[0].shape[0]
    total = np.zeros(k)
    n = 0
    for i in range(n_rows):
        if _complete(cols, mask, i):
            n += 1
            for j in range(k):
                total[j] += cols[j][i]
    hi = np.zeros(k)
    lo = np.zeros(k)
    c = np.zeros((k, k))
    if n == 0:
        return n, hi, lo, c
    hi = total / n
    d = np.empty(k)
    for i in range(n_rows):
        if _complete(cols, mask, i):
            for j in range(k):
                d[j] = cols[j][i] - hi[j]
                lo[j] += d[j]
            for a in range(k):
                for b in range(a + 1):
                    c[a, b] += d[a] * d[b]
    lo /= n
    for a in range(k):   # about the corrected mean: sum (d - lo)(d - lo)' = sum d d' - n lo lo'
        for b in range(a + 1):
            c[a, b] -= n * lo[a] * lo[b]
            c[b, a] = c[a, b]
    return n, hi, lo, c


@njit(cache=True, nogil=True)
def ols_residuals(cols: tuple[np.ndarray, ...], mask: np.ndarray, hi: np.ndarray,
                  lo: np.ndarray, beta: np.ndarray, const: bool
                  ) -> tuple[float, np.ndarray]:  # pragma: no cover
    """The second pass of a fit: residuals ``e = y - x . beta`` of the complete rows of
    ``cols`` (``[x..., y]``, ``mask`` set), with every column shifted by ``hi + lo`` first
    (the means: a centred fit, whose constant is then 0; zeros for a fit through the origin).
    Returns the residual sum of squares and the HC "meat" ``sum e^2 w w'`` with ``w = [1, x]``
    (``const``) or ``x``."""
    k = len(cols)
    n_rows = cols[0].shape[0]
    p = k - 1
    q = p + 1 if const else p
    meat = np.zeros((q, q))
    w = np.empty(q)
    ssr = 0.0
    for i in range(n_rows):
        if not _complete(cols, mask, i):
            continue
        e = (cols[p][i] - hi[p]) - lo[p]
        off = 0
        if const:
            w[0] = 1.0
            off = 1
        for j in range(p):
            x = (cols[j][i] - hi[j]) - lo[j]
            w[off + j] = x
            e -= x * beta[j]
        e2 = e * e
        ssr += e2
        for a in range(q):
            for b in range(a + 1):
                meat[a, b] += e2 * w[a] * w[b]
    for a in range(q):
        for b in range(a):
            meat[b, a] = meat[a, b]
    return ssr, meat


# -- fused OLS rows: the y/x/where expressions compiled into one numba pass ------------------
# ``ols`` evaluates its expressions and reduces the rows in one loop when every expression is
# arithmetic (+ - * /), comparisons, & and |, columns, numbers and casts to Float64 over
# null-free numeric columns (polars' semantics kept: NaN compares above every number and
# equal to itself, integers wrap in their polars type): no column is materialised.  The
# complete rows are taken in blocks of ``_BLOCK``; within a block the sums and cross-products
# of the deviations from the block's first row accumulate in registers, and each block is
# merged into the state with Chan's update (means as double-doubles, as in
# :class:`hfq.reduce.OLSMoments`).  Centring on one of the block's own rows bounds the
# cancellation to a factor ``_BLOCK`` (about 2e-13 relative at worst; for rows near their
# block's mean, the two-pass accuracy), in one pass over memory.  Anything else (nulls,
# Float32, functions, ...) returns None and the caller takes :func:`columns` and
# :func:`ols_moments`.  The generated module is a file in numba's cache directory, so a node
# compiles each distinct regression once (about a second), not once per process.
_BLOCK = 1024
_INT_TYPES = {"Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
              "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32"}
_ARITH = {"Plus": "+", "Minus": "-", "Multiply": "*", "TrueDivide": "/"}
_COMPARE = {"Lt": "_lt({}, {})", "LtEq": "_le({}, {})", "Gt": "_lt({1}, {0})",
            "GtEq": "_le({1}, {0})", "Eq": "_eq({}, {})", "NotEq": "(not _eq({}, {}))"}
_INT_COMPARE = {"Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">=", "Eq": "==", "NotEq": "!="}


@njit(cache=True, nogil=True)
def _lt(a: float, b: float) -> bool:  # pragma: no cover
    """``a < b`` as polars compares floats: NaN above every number, equal to itself."""
    return a < b or (np.isnan(b) and not np.isnan(a))


@njit(cache=True, nogil=True)
def _le(a: float, b: float) -> bool:  # pragma: no cover
    return a <= b or np.isnan(b)


@njit(cache=True, nogil=True)
def _eq(a: float, b: float) -> bool:  # pragma: no cover
    return a == b or (np.isnan(a) and np.isnan(b))


@njit(cache=True, nogil=True)
def _fold(n: int, hi: np.ndarray, lo: np.ndarray, c: np.ndarray, m: int, shift: np.ndarray,
          s: np.ndarray, s2: np.ndarray) -> int:  # pragma: no cover
    """Merge a block of ``m`` rows, given as sums ``s`` and lower-triangle cross-products
    ``s2`` of their deviations from ``shift`` (one of the block's rows), into the state
    ``(n, hi, lo, c)`` (updated in place; returns the new row count).  The block's centred
    cross-products ``s2 - s s' / m`` lose at most a factor ``m`` of precision to
    cancellation (its first row is one of its rows); the block's mean is a double-double
    ``shift + s / m`` and the merge is Chan's update of :class:`hfq.reduce.OLSMoments`."""
    k = s.shape[0]
    step = s / m
    bh = shift + step
    bb = bh - shift
    bl = (shift - (bh - bb)) + (step - bb)   # two-sum: bh + bl == shift + step exactly
    total = n + m
    delta = (bh - hi) + (bl - lo)
    if n == 0:
        hi[:] = bh
        lo[:] = bl
    else:
        move = delta * (m / total)
        new_hi = hi + move
        lo += (hi - new_hi) + move   # what the rounding of ``hi`` lost
        hi[:] = new_hi
    scale = n * m / total
    for a in range(k):
        for b in range(a + 1):
            c[a, b] += (s2[a, b] - s[a] * step[b]) + delta[a] * delta[b] * scale
            c[b, a] = c[a, b]
    return total


@functools.cache
def _source_digest() -> str:
    """A digest of this module's source: a generated module names it, so a changed helper
    (``_fold``, ``_lt``, ...) gives new files rather than stale cached code."""
    import hashlib
    with open(__file__, "rb") as f:
        return hashlib.blake2b(f.read(), digest_size=8).hexdigest()


def _fused_source(names: Sequence[str], values: Sequence[str], where: str) -> str:
    """The numba module of a fused OLS: ``moments`` and ``residuals`` over the rows where
    ``where`` holds and no value is NaN (``values`` = ``[x..., y]``, numba expressions of
    the row ``i`` of ``cols``); every per-row quantity is a scalar variable."""
    k = len(values)
    p = k - 1
    idx = range(k)
    tri = [(a, b) for a in idx for b in range(a + 1)]
    rows = [f"z{j} = {v}" for j, v in enumerate(values)]
    nan = " or ".join(f"np.isnan(z{j})" for j in idx)

    def lines(items: Sequence[str], indent: int) -> str:
        return "\n".join(" " * indent + item for item in items)

    row = lines([f"if not {where}:", "    continue", *rows, f"if {nan}:", "    continue"], 8)
    zero = lines([*(f"t{j} = 0.0" for j in idx), *(f"c{a}_{b} = 0.0" for a, b in tri)], 4)
    rezero = lines([*(f"t{j} = 0.0" for j in idx), *(f"c{a}_{b} = 0.0" for a, b in tri)], 12)
    fold = [*(f"bshift[{j}] = k{j}" for j in idx), *(f"bsum[{j}] = t{j}" for j in idx),
            *(f"bcross[{a}, {b}] = c{a}_{b}" for a, b in tri),
            "n = _fold(n, hi, lo, c, m, bshift, bsum, bcross)", "m = 0"]
    meat = [(a, b) for a in range(k) for b in range(a + 1)]   # w = [1, x...] or x
    # column names never enter the source (they are the caller's strings): columns are
    # cols[j], in the order of ``names``
    return f'''"""Generated by hfq.analytics.kernels.FusedOLS ({len(names)} columns).

kernels.py {_source_digest()}: numba's cache of this file holds the helpers it calls too
"""
import numpy as np
from numba import njit

from hfq.analytics.kernels import _eq, _fold, _le, _lt


@njit(cache=True, nogil=True, error_model="numpy")
def moments(cols, n_rows, block):
    hi = np.zeros({k})
    lo = np.zeros({k})
    c = np.zeros(({k}, {k}))
    bshift = np.empty({k})
    bsum = np.empty({k})
    bcross = np.zeros(({k}, {k}))
    n = 0
    m = 0
{lines([f"k{j} = 0.0" for j in idx], 4)}
{zero}
    for i in range(n_rows):
{row}
        if m == 0:
{lines([f"k{j} = z{j}" for j in idx], 12)}
{lines([f"d{j} = z{j} - k{j}" for j in idx], 8)}
{lines([f"t{j} += d{j}" for j in idx], 8)}
{lines([f"c{a}_{b} += d{a} * d{b}" for a, b in tri], 8)}
        m += 1
        if m == block:
{lines(fold, 12)}
{rezero}
    if m:
{lines(fold, 8)}
    return n, hi, lo, c


@njit(cache=True, nogil=True, error_model="numpy")
def residuals(cols, n_rows, hi, lo, beta, const):
    ssr = 0.0
{lines([f"m{a}_{b} = 0.0" for a, b in meat], 4)}
    for i in range(n_rows):
{row}
        e = (z{p} - hi[{p}]) - lo[{p}]
{lines([f"x{j} = (z{j} - hi[{j}]) - lo[{j}]" for j in range(p)], 8)}
{lines([f"e -= x{j} * beta[{j}]" for j in range(p)], 8)}
        e2 = e * e
        ssr += e2
        w0 = 1.0
{lines([f"w{j + 1} = x{j}" for j in range(p)], 8)}
{lines([f"m{a}_{b} += e2 * w{a} * w{b}" for a, b in meat], 8)}
    full = np.empty(({k}, {k}))
{lines([f"full[{a}, {b}] = m{a}_{b}" for a, b in meat], 4)}
{lines([f"full[{b}, {a}] = m{a}_{b}" for a, b in meat if a != b], 4)}
    return ssr, (full if const else full[1:, 1:].copy())
'''


class _Unfused(Exception):
    """An expression the fused kernels do not compile (the caller evaluates it with polars)."""


class _RowCode:
    """numba source of one row of polars expressions over the columns ``cols[j][i]``."""

    def __init__(self, schema: Mapping[str, pl.DataType]) -> None:
        import polars as pl
        self.schema = schema
        self.frame = pl.LazyFrame(schema=schema)
        self.names: list[str] = []   # the columns read, in argument order

    def _dtype(self, node: dict[str, Any]) -> str:
        import io
        import json

        import polars as pl
        expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
        return str(self.frame.select(expr.alias("_")).collect_schema()["_"])

    def code(self, node: dict[str, Any]) -> tuple[str, str]:
        """(source, kind) of ``node``: kind ``f`` float64, ``i`` an integer held as int64
        (the value of its polars type), ``b`` bool."""
        (kind, body), = node.items()
        if kind == "Alias":
            return self.code(body[0])
        if kind == "Column" and isinstance(body, str):
            dtype = str(self.schema.get(body))
            if dtype != "Float64" and dtype not in _INT_TYPES:
                raise _Unfused(f"column {body} of type {dtype}")
            if body not in self.names:
                self.names.append(body)
            j = self.names.index(body)
            return (f"cols[{j}][i]", "f") if dtype == "Float64" else (
                f"np.int64(cols[{j}][i])", "i")
        if kind == "Literal":
            (form, value), = body.items()
            (typ, number), = value.items()
            if form == "Dyn" and typ == "Int" or typ in _INT_TYPES:
                if isinstance(number, int) and -2**63 <= number < 2**63:
                    return f"np.int64({number})", "i"
            if (form == "Dyn" and typ == "Float" or typ == "Float64") and isinstance(
                    number, (int, float)):
                x = float(number)
                text = repr(x) if np.isfinite(x) else (
                    "np.nan" if np.isnan(x) else "np.inf" if x > 0 else "-np.inf")
                return f"np.float64({text})", "f"
            raise _Unfused(f"literal {body}")
        if kind == "Cast" and body.get("dtype") == {"Literal": "Float64"}:
            src, k = self.code(body["expr"])
            if k == "b":
                raise _Unfused("cast of a boolean")
            return f"np.float64({src})", "f"
        if kind == "BinaryExpr":
            op = body["op"]
            left, lk = self.code(body["left"])
            right, rk = self.code(body["right"])
            if op in ("And", "Or"):
                if lk != "b" or rk != "b":
                    raise _Unfused("& or | of numbers")
                return f"({left} {op.lower()} {right})", "b"
            if "b" in (lk, rk):
                raise _Unfused(f"{op} of a boolean")
            if op in _COMPARE:
                if lk == rk == "i":
                    return f"({left} {_INT_COMPARE[op]} {right})", "b"
                return _COMPARE[op].format(f"np.float64({left})", f"np.float64({right})"), "b"
            if op not in _ARITH:
                raise _Unfused(f"operator {op}")
            dtype = self._dtype(node)
            if dtype == "Float64":
                return f"(np.float64({left}) {_ARITH[op]} np.float64({right}))", "f"
            if dtype in _INT_TYPES and op != "TrueDivide" and lk == rk == "i":
                # integer arithmetic wraps in the result's type, as polars' does
                return f"np.int64(np.{_INT_TYPES[dtype]}({left} {_ARITH[op]} {right}))", "i"
            raise _Unfused(f"{op} giving {dtype}")
        raise _Unfused(kind)


_fused_modules: dict[str, Any] = {}
_fused_lock = threading.Lock()


def _fused_module(source: str) -> Any:
    """The generated module of ``source``, written once to numba's cache directory (so its
    compiled code is cached on disk like the other kernels') and imported once per process."""
    import hashlib
    import importlib.util
    import os
    import sys
    import tempfile
    digest = hashlib.blake2b(source.encode(), digest_size=12).hexdigest()
    with _fused_lock:
        if digest in _fused_modules:
            return _fused_modules[digest]
        root = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
            tempfile.gettempdir(), f"hfq-numba-{os.getuid()}")
        folder = os.path.join(root, "hfq_fused")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"fused_{digest}.py")
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as f:
                f.write(source)
            os.replace(tmp, path)   # atomic: another process may write the same file
        spec = importlib.util.spec_from_file_location(f"hfq_fused_{digest}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module   # numba's disk cache imports it by name
        spec.loader.exec_module(module)
        _fused_modules[digest] = module
        return module


class FusedOLS:
    """The rows of an OLS (``exprs`` = ``[x..., y]`` and ``where``) evaluated and reduced in
    one numba pass per frame; :meth:`moments` and :meth:`residuals` return None for a frame
    they cannot take (then use :func:`columns` with :func:`ols_moments` /
    :func:`ols_residuals`).  One instance serves any number of frames (compiled once per
    schema).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"x": [1, 2, 3, 4], "y": [1.0, 2.5, 2.0, float("nan")]})
    >>> fused = FusedOLS([pl.col("x").cast(pl.Float64), pl.col("y")], where=pl.col("x") > 1)
    >>> n, hi, lo, c = fused.moments(df)
    >>> n, (hi + lo).tolist(), c.tolist()
    (2, [2.5, 2.25], [[0.5, -0.25], [-0.25, 0.125]])
    >>> fused.moments(df.with_columns(y=pl.lit(None, pl.Float64))) is None   # nulls: polars
    True
    """

    def __init__(self, exprs: Sequence[pl.Expr], where: pl.Expr | None = None) -> None:
        import json
        self.trees = [json.loads(e.meta.serialize(format="json")) for e in exprs]
        self.where = None if where is None else json.loads(where.meta.serialize(format="json"))
        self._compiled: dict[tuple[tuple[str, str], ...], tuple[Any, list[str]] | None] = {}

    def __getstate__(self) -> dict[str, Any]:   # shipped to the nodes without its modules
        return {**self.__dict__, "_compiled": {}}

    @staticmethod
    def _schema(frame: pl.DataFrame) -> tuple[tuple[str, str], ...]:
        return tuple((name, str(dtype)) for name, dtype in frame.schema.items())

    def _kernels(self, frame: pl.DataFrame) -> tuple[Any, tuple[np.ndarray, ...]] | None:
        if frame.height == 0:
            return None
        schema = self._schema(frame)
        if schema not in self._compiled:
            self._compiled[schema] = self._compile(frame)
        compiled = self._compiled[schema]
        if compiled is None:
            return None
        module, names = compiled
        series = [frame[name] for name in names]
        if any(s.null_count() for s in series):
            return None
        return module, tuple(s.to_numpy() for s in series)

    def _compile(self, frame: pl.DataFrame) -> tuple[Any, list[str]] | None:
        rows = _RowCode(frame.schema)
        try:
            values = []
            for tree in self.trees:
                src, kind = rows.code(tree)
                if kind == "b":
                    raise _Unfused("a boolean value")
                values.append(f"np.float64({src})")
            where = "True"
            if self.where is not None:
                where, kind = rows.code(self.where)
                if kind != "b":
                    raise _Unfused("a where that is not boolean")
        except (_Unfused, KeyError, TypeError, ValueError, AttributeError):
            return None
        try:
            return _fused_module(_fused_source(rows.names, values, where)), rows.names
        except OSError:   # numba's cache directory is not writable: polars evaluates it
            return None

    def _run(self, frame: pl.DataFrame, kernel: str, *args: Any) -> Any:
        got = self._kernels(frame)
        if got is None:
            return None
        module, cols = got
        from numba.core.errors import NumbaError
        try:
            return getattr(module, kernel)(cols, frame.height, *args)
        except NumbaError:   # generated code numba will not compile: polars evaluates it
            import logging
            logging.getLogger(__name__).warning("hfq: fused OLS kernel for columns %s did not "
                                                "compile; evaluating with polars", list(
                                                    frame.columns), exc_info=True)
            self._compiled[self._schema(frame)] = None
            return None

    def moments(self, frame: pl.DataFrame
                ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | None:
        """:func:`ols_moments` of the frame's rows, or None (evaluate with polars)."""
        return self._run(frame, "moments", _BLOCK)

    def residuals(self, frame: pl.DataFrame, hi: np.ndarray, lo: np.ndarray,
                  beta: np.ndarray, const: bool) -> tuple[float, np.ndarray] | None:
        """:func:`ols_residuals` of the frame's rows, or None (evaluate with polars)."""
        return self._run(frame, "residuals", hi, lo, beta, const)


@njit(cache=True, nogil=True)
def runs(sym: np.ndarray, time: np.ndarray, bar_ns: int) -> np.ndarray:  # pragma: no cover
    """Start index of each run of rows with the same symbol code and bar (``time // bar_ns``)
    -- the groups of bars over rows sorted by symbol, then time.  (One division per run, not
    per row: a row continues the run while its time stays inside the run's bar.)"""
    n = time.shape[0]
    starts = np.empty(n, dtype=np.int64)
    count = 0
    lo = 0
    hi = 0
    for i in range(n):
        t = time[i]
        if i == 0 or sym[i] != sym[i - 1] or t >= hi or t < lo:
            starts[count] = i
            count += 1
            lo = t // bar_ns * bar_ns
            hi = lo + bar_ns
    return starts[:count]


@njit(cache=True, nogil=True)
def quote_bars(starts: np.ndarray, bid: np.ndarray, ofr: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """Per run: mean bid, mean offer, open/high/low/close of the mid, quote count.  NaN
    prices are missing values (left out; NaN where a run has none)."""
    r = starts.shape[0]
    n = bid.shape[0]
    out = np.empty((6, r))
    count = np.empty(r, dtype=np.int64)
    for k in range(r):
        lo = starts[k]
        hi = starts[k + 1] if k + 1 < r else n
        sb = 0.0
        nb = 0
        so = 0.0
        no = 0
        first = high = low = last = np.nan   # (in registers: one store per bar, not per row)
        seen = False
        for i in range(lo, hi):
            b = bid[i]
            o = ofr[i]
            if not np.isnan(b):
                sb += b
                nb += 1
            if not np.isnan(o):
                so += o
                no += 1
            if not (np.isnan(b) or np.isnan(o)):
                mid = (b + o) / 2
                if not seen:
                    first = mid
                    high = mid
                    low = mid
                    seen = True
                high = max(high, mid)
                low = min(low, mid)
                last = mid
        out[0, k] = sb / nb if nb else np.nan
        out[1, k] = so / no if no else np.nan
        out[2, k] = first
        out[3, k] = high
        out[4, k] = low
        out[5, k] = last
        count[k] = hi - lo
    return out, count


@njit(cache=True, nogil=True)
def trade_bars(starts: np.ndarray, price: np.ndarray, size: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """Per run: open/high/low/close, volume, VWAP, trade count.  NaN prices (and sizes) are
    missing values."""
    r = starts.shape[0]
    n = price.shape[0]
    out = np.full((6, r), np.nan)
    count = np.empty(r, dtype=np.int64)
    for k in range(r):
        lo = starts[k]
        hi = starts[k + 1] if k + 1 < r else n
        volume = 0.0
        notional = 0.0
        traded = 0.0
        seen = False
        for i in range(lo, hi):
            p = price[i]
            s = size[i]
            if not np.isnan(s):
                volume += s
            if np.isnan(p):
                continue
            if not seen:
                out[0, k] = p
                out[1, k] = p
                out[2, k] = p
                seen = True
            out[1, k] = max(out[1, k], p)
            out[2, k] = min(out[2, k], p)
            out[3, k] = p
            if not np.isnan(s):
                notional += p * s
                traded += s
        out[4, k] = volume
        if traded:
            out[5, k] = notional / traded
        count[k] = hi - lo
    return out, count
