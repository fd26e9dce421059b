"""SQL joins (``[INNER|LEFT|FULL|SEMI|ANTI|CROSS] JOIN``, ``ASOF [LEFT] JOIN``) compiled to
the engine's join operations."""

from __future__ import annotations

from sqlglot import exp

from hfq.engine.sql.errors import at, error, unsupported
from hfq.engine.sql.scope import Env, Scope
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
    if join.args.get("using"):
        raise unsupported(join, "JOIN ... USING (write ON a.x = b.x)")
    # the right side's clashing names get a qualifier prefix, so both stay addressable
    taken = set(scope.query.columns)
    rename = {col: (col if col not in taken else f"{next(iter(right.qualifiers), 'r')}.{col}")
              for col in right.query.columns}
    if any(a != b for a, b in rename.items()):
        right.query = right.query.rename({a: b for a, b in rename.items() if a != b})
    right.qualifiers = {q: {k: rename[v] for k, v in cols.items()}
                        for q, cols in right.qualifiers.items()}
    on = join.args.get("on")
    combined = Scope(scope.query, {**scope.qualifiers, **right.qualifiers})
    if method == "ASOF":
        return _asof(c, scope, right, combined, join, on, side)
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
            q = scope.query.join(right.query, how=how, left_on=lefts, right_on=rights)
        else:
            q = scope.query.join(right.query, how="cross")
    if how in ("semi", "anti"):
        combined = Scope(q, dict(scope.qualifiers))
    combined.query = q
    for cond in rest:
        predicate = c.expr(cond, combined)
        with at(cond):
            combined.query = combined.query.filter(predicate)
    return combined


def _asof(c: Env, left: Scope, right: Scope, combined: Scope, join: exp.Join,
          on: exp.Expression | None, side: str) -> Scope:
    if side not in ("", "LEFT"):
        raise error(join, f"ASOF {side} JOIN is not supported (ASOF JOIN or ASOF LEFT JOIN)")
    by_l, by_r = [], []
    inequality = None
    for cond in conjuncts(on):
        a = _side(cond.this, left, right) if isinstance(cond, exp.Binary) else None
        b = _side(cond.expression, left, right) if isinstance(cond, exp.Binary) else None
        if (a, b) not in (("left", "right"), ("right", "left")) or \
                not isinstance(cond.this, exp.Column) or \
                not isinstance(cond.expression, exp.Column):
            raise error(cond, "ASOF JOIN conditions compare a column of each side "
                               "(equalities and one inequality)")
        lcol, rcol = (cond.this, cond.expression) if a == "left" else \
            (cond.expression, cond.this)
        op = type(cond) if a == "left" else _FLIP.get(type(cond), type(cond))
        if op is exp.EQ:
            by_l.append(left.resolve(lcol))
            by_r.append(right.resolve(rcol))
        elif op in _FLIP:
            if inequality is not None:
                raise error(cond, "ASOF JOIN takes exactly one inequality")
            inequality = (left.resolve(lcol), right.resolve(rcol), op)
        else:
            raise error(cond, f"ASOF JOIN condition {cond.sql('duckdb')!r} is not supported")
    if inequality is None:
        raise error(join, "ASOF JOIN needs one inequality such as t.time >= q.time")
    lo, ro, op = inequality
    strategy = "backward" if op in (exp.GTE, exp.GT) else "forward"
    with at(join):
        combined.query = left.query.join_asof(
            right.query, left_on=lo, right_on=ro, by_left=by_l, by_right=by_r,
            strategy=strategy, allow_exact_matches=op in (exp.GTE, exp.LTE),
            keep_unmatched=side == "LEFT")
    return combined
