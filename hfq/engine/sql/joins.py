"""SQL joins (``[INNER|LEFT|FULL|SEMI|ANTI|CROSS] JOIN``, ``ASOF [LEFT] JOIN``) compiled to
the engine's join operations."""

from __future__ import annotations

from typing import cast

import polars as pl
from sqlglot import exp

from hfq.engine.joins import Join
from hfq.engine.sql.errors import at, error, unsupported
from hfq.engine.sql.scope import USING, Env, Scope
from hfq.engine.sql.syntax import conjuncts

__all__ = ["compile_join"]

_FLIP: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.LT: exp.GT}


def _side(node: exp.Expression, left: Scope, right: Scope) -> str | None:
    """"left"/"right" when every column of ``node`` belongs to that side, else None."""
    sides = set()
    for col in node.find_all(exp.Column):
        in_left = (col.table in left.qualifiers) if col.table else \
            any(col.name in c for c in left.qualifiers.values())
        in_right = (col.table in right.qualifiers) if col.table else \
            any(col.name in c for c in right.qualifiers.values())
        if in_left and not in_right:
            sides.add("left")
        elif in_right and not in_left:
            sides.add("right")
        else:
            return None
    return sides.pop() if len(sides) == 1 else None


def compile_join(c: Env, scope: Scope, join: exp.Join) -> Scope:
    """``scope`` joined with the item of ``join``: the combined scope."""
    right = c.source(join.this)
    method = (join.args.get("method") or "").upper()
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    # the right side's clashing names get a qualifier prefix, so both stay addressable
    taken = set(scope.query.columns)
    rename = {col: (col if col not in taken else f"{next(iter(right.qualifiers), 'r')}.{col}")
              for col in right.query.columns}
    if any(a != b for a, b in rename.items()):
        right.query = right.query.rename({a: b for a, b in rename.items() if a != b})
    right.qualifiers = {q: {k: rename[v] for k, v in cols.items()}
                        for q, cols in right.qualifiers.items()}
    on = join.args.get("on")
    using = [u.name for u in join.args.get("using") or []]
    if using:
        on = _using(scope, right, join, using, asof=method == "ASOF")
    combined = Scope(scope.query, {**scope.qualifiers, **right.qualifiers}, dict(scope.using))
    if method == "ASOF":
        return _drop_using(_asof(c, scope, right, combined, join, on, side), scope, right,
                           using)
    if using and (side or kind) in ("FULL", "OUTER"):
        raise unsupported(join, "FULL JOIN ... USING")
    return _drop_using(_join(c, scope, right, combined, join, on, method, side, kind), scope,
                       right, using)


def _using(left: Scope, right: Scope, join: exp.Join, keys: list[str], *, asof: bool
           ) -> exp.Expression:
    """``USING (k1, k2, ...)`` as its ON condition (for ASOF the last key is the
    inequality ``left.k >= right.k``)."""
    alias = next(iter(right.qualifiers), None)
    conds: list[exp.Expression] = []
    for i, k in enumerate(keys):
        owners = [q for q, cols in left.qualifiers.items() if k in cols]
        if (len(owners) != 1 and k not in left.using) or alias is None or \
                k not in right.qualifiers[alias]:
            raise error(join, f"USING ({k}): the column must be on each side once")
        op = exp.GTE if asof and i == len(keys) - 1 else exp.EQ
        mine = exp.column(k) if k in left.using else exp.column(k, owners[0])
        conds.append(op(this=mine, expression=exp.column(k, alias)))
    out = cast(exp.Expression, exp.and_(*conds))
    return out


def _drop_using(combined: Scope, left: Scope, right: Scope, keys: list[str]) -> Scope:
    """After ``USING``, each key once: the unqualified name reads the left side's column,
    the right side's copy stays under its qualifier (NULL where a LEFT JOIN found no row)
    but out of ``*``."""
    if not keys or combined.query is left.query:
        return combined
    alias = next(iter(right.qualifiers))
    cols = dict(combined.qualifiers[alias])
    hidden = {cols[k]: f"{USING}{alias}.{k}" for k in keys}
    combined.query = combined.query.rename(hidden)
    combined.qualifiers[alias] = {k: hidden.get(v, v) for k, v in cols.items()}
    for k in keys:
        combined.using[k] = left.resolve(exp.column(k))
    return combined


def _join(c: Env, scope: Scope, right: Scope, combined: Scope, join: exp.Join,
          on: exp.Expression | None, method: str, side: str, kind: str) -> Scope:
    if method:
        raise unsupported(join, f"{method} JOIN")
    how = {"": "inner", "INNER": "inner", "LEFT": "left", "FULL": "full", "OUTER": "full",
           "SEMI": "semi", "ANTI": "anti", "CROSS": "cross"}.get(side or kind)
    if side in ("LEFT", "FULL") and kind in ("SEMI", "ANTI"):
        how = kind.lower()
    if side == "RIGHT" or how is None:
        raise unsupported(join, f"{side or kind} JOIN")
    if on is None:
        if how not in ("cross", "inner"):
            raise error(join, f"{how.upper()} JOIN needs an ON condition")
        with at(join):
            combined.query = scope.query.join(right.query, how="cross")
        return combined
    lefts, rights, rest = [], [], []
    for cond in conjuncts(on):
        if isinstance(cond, exp.EQ):
            a, b = _side(cond.this, scope, right), _side(cond.expression, scope, right)
            if (a, b) in (("left", "right"), ("right", "left")):
                lx, rx = (cond.this, cond.expression) if a == "left" else \
                    (cond.expression, cond.this)
                lefts.append(c.expr(lx, scope))
                rights.append(c.expr(rx, right))
                continue
        rest.append(cond)
    if rest and how != "inner":
        raise error(rest[0], f"{how.upper()} JOIN conditions must be equalities between the "
                              "two sides")
    with at(join):
        if lefts:
            q = scope.query._then(Join(right.query, tuple(lefts), tuple(rights), how,
                                       keep_keys=True))
        else:
            q = scope.query.join(right.query, how="cross")
    if how in ("semi", "anti"):
        combined = Scope(q, dict(scope.qualifiers), dict(scope.using))
    combined.query = q
    for cond in rest:
        predicate = c.condition(cond, combined, "JOIN ... ON")   # ON NULL: no row
        with at(cond):
            combined.query = combined.query.filter(predicate)
    return combined


def _asof_column(c: Env, scope: Scope, node: exp.Expression, name: str) -> str:
    """The frame column holding ``node`` on its side (computed as ``name`` unless it is a
    plain column)."""
    if isinstance(node, exp.Column):
        return scope.resolve(node)
    value = c.expr(node, scope)
    with at(node):
        scope.query = scope.query.with_columns(value.alias(name))
    return name


def _asof(c: Env, left: Scope, right: Scope, combined: Scope, join: exp.Join,
          on: exp.Expression | None, side: str) -> Scope:
    if side not in ("", "LEFT"):
        raise error(join, f"ASOF {side} JOIN is not supported (ASOF JOIN or ASOF LEFT JOIN)")
    by_l: list[str] = []
    by_r: list[str] = []
    inequality = None
    for cond in conjuncts(on):
        a = _side(cond.this, left, right) if isinstance(cond, exp.Binary) else None
        b = _side(cond.expression, left, right) if isinstance(cond, exp.Binary) else None
        if (a, b) not in (("left", "right"), ("right", "left")):
            raise error(cond, "ASOF JOIN conditions compare an expression of each side "
                               "(equalities and one inequality)")
        lx, rx = (cond.this, cond.expression) if a == "left" else \
            (cond.expression, cond.this)
        op = type(cond) if a == "left" else _FLIP.get(type(cond), type(cond))
        if op is exp.EQ:
            by_l.append(_asof_column(c, left, lx, f"__asof_l{len(by_l)}"))
            by_r.append(_asof_column(c, right, rx, f"__asof_r{len(by_r)}"))
        elif op in _FLIP:
            if inequality is not None:
                raise error(cond, "ASOF JOIN takes exactly one inequality")
            inequality = (_asof_column(c, left, lx, "__asof_l"),
                          _asof_column(c, right, rx, "__asof_r"), op)
        else:
            raise error(cond, f"ASOF JOIN condition {cond.sql('duckdb')!r} is not supported")
    if inequality is None:
        raise error(join, "ASOF JOIN needs one inequality such as t.time >= q.time")
    lo, ro, op = inequality
    strategy = "backward" if op in (exp.GTE, exp.GT) else "forward"
    lt, rt = left.query.schema[lo], right.query.schema[ro]
    if lt != rt:   # the two times in one type (a TIMESTAMP of another unit or zone...)
        if not (lt.is_temporal() and rt.is_temporal()):
            raise error(join, f"ASOF JOIN compares {lt} with {rt}")
        right.query = right.query.with_columns(pl.col(ro).cast(lt).alias("__asof_r"))
        ro = "__asof_r"
    with at(join):
        combined.query = left.query.join_asof(
            right.query, left_on=lo, right_on=ro, by_left=by_l, by_right=by_r,
            strategy=strategy, allow_exact_matches=op in (exp.GTE, exp.LTE),
            keep_unmatched=side == "LEFT")
        # the join keeps one copy of each equality key; SQL keeps the right side's too:
        # equal to the left's where a row matched, NULL where none did (ASOF LEFT)
        schema = right.query.schema
        kept = [pl.when(pl.col(ro).is_not_null()).then(pl.col(lk).cast(schema[rk])).alias(rk)
                for lk, rk in zip(by_l, by_r) if not rk.startswith("__")]
        if kept:
            combined.query = combined.query.with_columns(*kept)
    return combined
