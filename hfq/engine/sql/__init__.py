"""SQL (DuckDB's dialect and semantics) compiled to the engine's plan.

sqlglot parses the text (dialect ``duckdb``); the rules of this package turn the tree into
the same :class:`~hfq.engine.query.Query` the Python API builds, so both run the same way.
Semantics follow DuckDB (the oracle the tests compare with): ``/`` gives a double, integers
are widened to 64 bits before any arithmetic (``EXTRACT(HOUR FROM t) * 60 +
EXTRACT(MINUTE FROM t)`` never wraps), ``sum`` over no values is NULL, ``count(DISTINCT x)``
ignores NULL, NULLs sort last.  Anything not supported raises :class:`~hfq.errors.SqlError`
naming the construct and its line and column -- never a guess.

Modules: :mod:`~.statement` (parse, cache, entry point), :mod:`~.scope` (names and the
compiler interface every rule shares), :mod:`~.select`, :mod:`~.expressions`,
:mod:`~.functions`, :mod:`~.aggregates`, :mod:`~.windows`, :mod:`~.joins`, :mod:`~.pivot`,
:mod:`~.literals`, :mod:`~.syntax`, :mod:`~.errors`.
"""

from hfq.engine.sql.statement import SqlCache, compile_sql

__all__ = ["SqlCache", "compile_sql"]
