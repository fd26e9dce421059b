"""hfq: financial high-frequency data, stored as partitioned Arrow and computed where it lives.

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("quotes", hfq.schemas.TAQ,
...                     partition_by=hfq.Compo(hfq.Value("date"), hfq.Hash("symbol", 4)),
...                     sort_by=("symbol", "time"))
>>> t.append(hfq.synth.taq_table(rows_per_day=1000, symbols=20))
1
>>> len(db["quotes"])
1000
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hfq import config, errors, quality, reduce, schema, schemas, synth
from hfq.db import Database, connect
from hfq.errors import HfqError
from hfq.partition import Compo, Hash, Range, Value
from hfq.scan import Scan
from hfq.table import Table

if TYPE_CHECKING:
    from hfq import engine
    from hfq.engine import bucket, minute_of_day  # the query engine's time buckets


def __getattr__(name: str) -> Any:
    """``hfq.engine`` and its time buckets load on first use: a process that only reads
    does not pay for the query engine's imports."""
    if name in ("engine", "bucket", "minute_of_day"):
        import importlib
        engine = importlib.import_module("hfq.engine")
        return engine if name == "engine" else getattr(engine, name)
    raise AttributeError(f"module 'hfq' has no attribute {name!r}")

__all__ = [
    "Compo", "Database", "Hash", "HfqError", "Range", "Scan", "Table", "Value", "config",
    "connect", "errors", "quality", "reduce", "schema", "schemas", "synth",
    "bucket", "engine", "minute_of_day",
]

__version__ = "0.1.0"
