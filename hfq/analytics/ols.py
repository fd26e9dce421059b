"""Distributed ordinary least squares with the statistics of a regression table.

Each partition evaluates ``y`` and the regressors (polars expressions) where it is stored and
reduces its rows to the state of :class:`hfq.reduce.OLSMoments` -- row count, means and
*centred* cross-products -- which the driver merges exactly (Chan's update, means kept as
double-doubles).  Arithmetic, comparisons and ``&``/``|`` over null-free numeric columns are
compiled with the reduction into one numba pass (:class:`hfq.analytics.kernels.FusedOLS`: no
column materialised); other expressions are evaluated by polars and reduced by numba.
The fit is solved in centred coordinates, which stay well conditioned when a regressor sits
far from zero with little variance (x near 1e6): raw normal equations would lose half the
digits there.  A second pass over the same rows, only when it is needed, gives the exact
residual sum of squares and the heteroskedasticity-robust (HC0/HC1) "meat" ``sum e^2 x x'``.

Rows where ``y`` or any regressor is null or NaN are dropped, never zero-filled.  Both passes
read the same table version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from hfq.errors import HfqError
from hfq.reduce import OLSMoments
from hfq.session import map_reduce

if TYPE_CHECKING:
    from hfq.session import TableLike

__all__ = ["OLSFit", "expr_text", "ols"]

_ROBUST = (None, "HC0", "HC1")
# below this share of the total sum of squares, the residual sum of squares taken from the
# moments (a difference) has lost too many digits: compute it from the residuals instead
_EXACT_SSR_BELOW = 1e-6


@dataclass(frozen=True)
class OLSFit:
    """A fitted regression (what :func:`ols` returns); per-coefficient values are dicts keyed
    by regressor name (``"intercept"`` first when fitted).

    Examples
    --------
    >>> import numpy as np
    >>> fit = OLSFit(names=["intercept", "x"], coef={"intercept": 1.0, "x": 2.0},
    ...              stderr={"intercept": 0.1, "x": 0.2}, tstat={"intercept": 10.0, "x": 10.0},
    ...              pvalue={"intercept": 0.0, "x": 0.0}, cov=np.diag([0.01, 0.04]), n=100,
    ...              df_model=1, df_resid=98, r2=0.9, adj_r2=0.899, resid_std=0.5, ssr=24.5,
    ...              cov_type="nonrobust", y="y")
    >>> print(fit.summary())   # doctest: +NORMALIZE_WHITESPACE
    OLS of y on 2 coefficients
    rows 100   df model 1   df resid 98
    R^2 0.9   adj. R^2 0.899   resid. std 0.5   covariance nonrobust
                          coef       std err          t      P>|t|
    intercept                1           0.1         10          0
    x                        2           0.2         10          0
    >>> fit.table()["coef"].to_list()
    [1.0, 2.0]
    """

    names: list[str]
    coef: dict[str, float]
    stderr: dict[str, float]
    tstat: dict[str, float]
    pvalue: dict[str, float]
    cov: np.ndarray
    n: int
    df_model: int
    df_resid: int
    r2: float
    adj_r2: float
    resid_std: float
    ssr: float
    cov_type: str
    y: str

    def table(self) -> pl.DataFrame:
        """One row per coefficient: name, coef, stderr, tstat, pvalue.

        Examples
        --------
        A fit of one regressor without intercept, made by hand:

        >>> import numpy as np, polars as pl
        >>> from hfq.analytics import OLSFit
        >>> one = dict(names=["size"], coef={"size": -0.5}, stderr={"size": 0.25},
        ...            tstat={"size": -2.0}, pvalue={"size": 0.0504}, cov=np.array([[0.0625]]))
        >>> fit = OLSFit(**one, n=50, df_model=1, df_resid=49, r2=0.08, adj_r2=0.06,
        ...              resid_std=1.5, ssr=110.25, cov_type="nonrobust", y="spread")
        >>> fit.table().rows()
        [('size', -0.5, 0.25, -2.0, 0.0504)]
        >>> fit.table().filter(pl.col("pvalue") < 0.05).height     # not significant at 5%
        0
        """
        return pl.DataFrame({"name": self.names,
                             "coef": [self.coef[k] for k in self.names],
                             "stderr": [self.stderr[k] for k in self.names],
                             "tstat": [self.tstat[k] for k in self.names],
                             "pvalue": [self.pvalue[k] for k in self.names]})

    def summary(self) -> str:
        """The fit as text, like a statistics package's regression table (also ``repr``).

        Examples
        --------
        >>> import numpy as np
        >>> from hfq.analytics import OLSFit
        >>> fit = OLSFit(names=["intercept", "size"], coef={"intercept": 1.0, "size": -0.5},
        ...              stderr={"intercept": 0.5, "size": 0.25},
        ...              tstat={"intercept": 2.0, "size": -2.0},
        ...              pvalue={"intercept": 0.0511, "size": 0.0511}, cov=np.diag([0.25, 0.0625]),
        ...              n=50, df_model=1, df_resid=48, r2=0.08, adj_r2=0.06, resid_std=1.5,
        ...              ssr=108.0, cov_type="HC1", y="spread")
        >>> print(fit.summary())   # doctest: +NORMALIZE_WHITESPACE
        OLS of spread on 2 coefficients
        rows 50   df model 1   df resid 48
        R^2 0.08   adj. R^2 0.06   resid. std 1.5   covariance HC1
                              coef       std err          t      P>|t|
        intercept                1           0.5          2     0.0511
        size                  -0.5          0.25         -2     0.0511
        """
        width = max(12, *(len(k) for k in self.names))
        lines = [f"OLS of {self.y} on {len(self.names)} coefficients",
                 f"rows {self.n:,}   df model {self.df_model}   df resid {self.df_resid:,}",
                 f"R^2 {self.r2:.6g}   adj. R^2 {self.adj_r2:.6g}   "
                 f"resid. std {self.resid_std:.6g}   covariance {self.cov_type}",
                 f"{'':{width}} {'coef':>13} {'std err':>13} {'t':>10} {'P>|t|':>10}"]
        lines += [f"{k:{width}} {self.coef[k]:13.6g} {self.stderr[k]:13.6g} "
                  f"{self.tstat[k]:10.4g} {self.pvalue[k]:10.4g}" for k in self.names]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def ols(table: TableLike, y: pl.Expr | str,
        x: Mapping[str, pl.Expr | str] | Sequence[pl.Expr | str] | pl.Expr | str, *,
        where: pl.Expr | None = None, dates: Any = None, symbols: Any = None,
        intercept: bool = True, robust: str | None = None, version: int | None = None,
        progress: bool | None = None) -> OLSFit:
    """Regress ``y`` on the regressors ``x`` over the rows of ``table`` passing ``where``,
    ``dates`` and ``symbols``.

    ``x``: ``{name: expression}``, a list of expressions or column names (named after their
    output), or one.  ``robust="HC1"`` (or ``"HC0"``) gives heteroskedasticity-robust
    standard errors; the default is the classical ones.

    Examples
    --------
    >>> import polars as pl
    >>> from hfq import analytics as ha
    >>> from hfq.demo import example_quotes
    >>> quotes = example_quotes(days=1)
    >>> bid, ofr = pl.col("bid"), pl.col("ofr")
    >>> fit = ha.ols(quotes, y=ofr / bid - 1, x={"size": pl.col("bidsiz") + pl.col("ofrsiz")},
    ...              where=(ofr > bid) & (bid > 0) & (ofr / bid < 1.2), robust="HC1")
    >>> print(fit.summary().splitlines()[0])
    OLS of ofr/bid - 1 on 2 coefficients
    >>> fit.names, fit.cov_type, fit.n == fit.df_resid + 2
    (['intercept', 'size'], 'HC1', True)
    >>> quotes.db.close()
    """
    if robust not in _ROBUST:
        raise ValueError(f"robust must be None, 'HC0' or 'HC1', not {robust!r}")
    names, exprs = _regressors(x)
    y_expr = pl.col(y) if isinstance(y, str) else y
    y_name = y if isinstance(y, str) else expr_text(y_expr)
    z_exprs = [e.cast(pl.Float64).alias(f"__x{i}") for i, e in enumerate(exprs)]
    z_exprs.append(y_expr.cast(pl.Float64).alias("__y"))
    used = [*z_exprs, *([] if where is None else [where])]
    columns = list(dict.fromkeys(c for e in used for c in e.meta.root_names()))
    version = table.snapshot().version if version is None else version
    # ``where`` is evaluated by the kernels' inputs (a mask), not by the scan: no filtered copy
    scan = {"columns": columns, "dates": dates, "symbols": symbols, "version": version,
            "progress": progress}

    from hfq.analytics.kernels import FusedOLS
    fused = FusedOLS(z_exprs, where)   # one numba pass per partition where it can

    def moments(df: pl.DataFrame) -> tuple[Any, ...]:
        from hfq.analytics.kernels import columns, ols_moments
        got = fused.moments(df)
        n, hi, lo, c = ols_moments(*columns(df, z_exprs, where)) if got is None else got
        return (n, hi, lo, c) if n else OLSMoments().identity()

    state = map_reduce(table, moments, OLSMoments().merge, **scan)
    p = len(names)
    k = p + intercept
    n = 0 if state is None else state[0]
    if n <= k:
        raise HfqError(f"OLS on table {table.name!r}: {n} complete rows for {k} coefficients; "
                       "need more rows than coefficients")
    _, hi, lo, c = state
    mean = hi + lo
    if intercept:   # centred coordinates: y - ybar = (x - xbar) b + e
        xx, xy, tss = c[:p, :p], c[:p, p], c[p, p]
    else:           # raw cross-products, rebuilt from the centred ones
        xx = c[:p, :p] + n * np.outer(mean[:p], mean[:p])
        xy = c[:p, p] + n * mean[:p] * mean[p]
        tss = c[p, p] + n * mean[p] ** 2
    xx_inv = _inverse(xx, names, table.name)
    beta = xx_inv @ xy
    ssr = tss - xy @ beta
    meat: np.ndarray | None = None
    if robust or ssr < _EXACT_SSR_BELOW * tss:
        shift_hi, shift_lo = (hi, lo) if intercept else (np.zeros(p + 1), np.zeros(p + 1))

        def residuals(df: pl.DataFrame) -> tuple[float, np.ndarray]:
            from hfq.analytics.kernels import columns, ols_residuals
            got = fused.residuals(df, shift_hi, shift_lo, beta, intercept)
            return ols_residuals(*columns(df, z_exprs, where), shift_hi, shift_lo, beta,
                                 intercept) if got is None else got

        ssr, meat = map_reduce(table, residuals, lambda a, b: (a[0] + b[0], a[1] + b[1]),
                                     **scan)
    df_resid = n - k
    sigma2 = ssr / df_resid
    if intercept:
        bread = np.zeros((k, k))
        bread[0, 0] = 1.0 / n
        bread[1:, 1:] = xx_inv
        # back from centred coordinates: const = ybar - xbar . b
        a = np.eye(k)
        a[0, 1:] = -mean[:p]
        coef = np.concatenate([[mean[p] - mean[:p] @ beta], beta])
        names = ["intercept", *names]
    else:
        bread, a, coef = xx_inv, np.eye(k), beta
    if robust:
        assert meat is not None   # robust always runs the residual pass
        inner = bread @ meat @ bread * (n / df_resid if robust == "HC1" else 1.0)
    else:
        inner = bread * sigma2
    cov = a @ inner @ a.T
    stderr = np.sqrt(np.diag(cov))
    with np.errstate(divide="ignore", invalid="ignore"):
        tstat = coef / stderr
    from scipy.stats import t as student_t
    pvalue = 2.0 * student_t.sf(np.abs(tstat), df_resid)
    r2 = 1.0 - ssr / tss
    adj_r2 = 1.0 - (n - intercept) / df_resid * (1.0 - r2)

    def by_name(values: Iterable[Any]) -> dict[str, float]:
        return dict(zip(names, (float(v) for v in values)))

    return OLSFit(names=names, coef=by_name(coef), stderr=by_name(stderr),
                  tstat=by_name(tstat), pvalue=by_name(pvalue), cov=cov, n=int(n),
                  df_model=p, df_resid=int(df_resid), r2=float(r2), adj_r2=float(adj_r2),
                  resid_std=float(np.sqrt(sigma2)), ssr=float(ssr),
                  cov_type=robust or "nonrobust", y=y_name)


def _regressors(x: Mapping[str, pl.Expr | str] | Sequence[pl.Expr | str] | pl.Expr | str
                ) -> tuple[list[str], list[pl.Expr]]:
    items: list[tuple[str | None, pl.Expr | str]]
    if isinstance(x, Mapping):
        items = list(x.items())
    else:
        if isinstance(x, (str, pl.Expr)):
            x = [x]
        items = []
        for e in x:
            e = pl.col(e) if isinstance(e, str) else e
            items.append((e.meta.output_name(raise_if_undetermined=False), e))
    if not items:
        raise ValueError("ols needs at least one regressor in x")
    names = [str(k) for k, _ in items]
    if None in (k for k, _ in items) or len(set(names)) != len(names):
        raise ValueError(f"regressors need distinct names (pass a dict name -> expression); "
                         f"got {names}")
    return names, [pl.col(e) if isinstance(e, str) else e for _, e in items]


def _inverse(xx: np.ndarray, names: list[str], table: str) -> np.ndarray:
    """Inverse of the (centred) cross-product matrix, solved on its correlation form so that
    regressors of very different scales do not cost digits; collinear regressors are an
    error naming them."""
    d = np.sqrt(np.diag(xx))
    flat = [n for n, v in zip(names, d) if not v > 0]
    if flat:
        raise HfqError(f"OLS on table {table!r}: regressor(s) {flat} leave nothing to "
                       "explain y with (constant beside an intercept, or all zero)")
    corr = xx / np.outer(d, d)
    eig = np.linalg.eigvalsh(corr)
    if eig[0] < 1e-12 * eig[-1]:
        raise HfqError(f"OLS on table {table!r}: regressors {names} are collinear "
                       f"(condition number {eig[-1] / max(eig[0], 1e-300):.3g})")
    return np.linalg.inv(corr) / np.outer(d, d)


# Python's operator precedence, for the operators polars expressions are written with
_BINARY = {"Or": (" | ", 2), "Xor": (" ^ ", 3), "And": (" & ", 4),
           "Eq": (" == ", 1), "EqValidity": (" == ", 1), "NotEq": (" != ", 1),
           "NotEqValidity": (" != ", 1), "Lt": (" < ", 1), "LtEq": (" <= ", 1),
           "Gt": (" > ", 1), "GtEq": (" >= ", 1), "Plus": (" + ", 5), "Minus": (" - ", 5),
           "Multiply": ("*", 6),
           "TrueDivide": ("/", 6), "FloorDivide": ("//", 6), "Modulus": ("%", 6)}


def expr_text(expr: pl.Expr) -> str:
    """A polars expression as it is written: ``pl.col("ofr") / pl.col("bid") - 1`` ->
    ``"ofr/bid - 1"`` (arithmetic, comparisons, ``&``/``|``, columns, numbers, aliases);
    anything else is polars' own text with ``col("x")`` shortened to ``x``.

    Examples
    --------
    >>> import polars as pl
    >>> expr_text(pl.col("ofr") / pl.col("bid") - 1)
    'ofr/bid - 1'
    >>> expr_text((pl.col("bidsiz") + pl.col("ofrsiz")) * (pl.col("ofr") + pl.col("bid")) / 2)
    '(bidsiz + ofrsiz)*(ofr + bid)/2'
    >>> expr_text(pl.col("a") - (pl.col("b") - pl.col("c")))
    'a - (b - c)'
    >>> expr_text(pl.col("x").log().alias("log_x"))
    'log_x'
    """
    import json
    try:
        return _node_text(json.loads(expr.meta.serialize(format="json")))[0]
    except (ValueError, KeyError, TypeError):   # a node this does not know: polars' text
        text = re.sub(r'col\("([^"]*)"\)', r"\1", str(expr))
        return re.sub(r"dyn (?:int|float): ", "", text)


def _node_text(node: dict[str, Any]) -> tuple[str, int]:
    """(text, precedence) of one node of a serialised polars expression."""
    (kind, body), = node.items()
    if kind == "Column" and isinstance(body, str):
        return body, 9
    if kind == "Alias":
        return str(body[1]), 9
    if kind == "Cast":                    # a cast to a number type reads as its operand
        return _node_text(body["expr"])
    if kind == "Literal":
        (_, value), = body.items()        # {"Dyn": {"Int": 1}} or {"Scalar": ...}
        (_, number), = value.items()
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return repr(number), 9 if number >= 0 else 7
    if kind == "BinaryExpr":
        op, prec = _BINARY[body["op"]]
        left, lp = _node_text(body["left"])
        right, rp = _node_text(body["right"])
        left = left if lp >= prec else f"({left})"
        right = right if rp > prec else f"({right})"
        return f"{left}{op}{right}", prec
    raise KeyError(kind)
