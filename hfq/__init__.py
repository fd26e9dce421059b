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

from hfq import config, engine, errors, quality, reduce, schema, schemas, synth
from hfq.db import Database, connect
from hfq.engine import bucket, minute_of_day  # the query engine's time buckets
from hfq.errors import HfqError
from hfq.partition import Compo, Hash, Range, Value
from hfq.scan import Scan
from hfq.table import Table

__all__ = [
    "Compo", "Database", "Hash", "HfqError", "Range", "Scan", "Table", "Value", "config",
    "connect", "errors", "quality", "reduce", "schema", "schemas", "synth",
    "bucket", "engine", "minute_of_day",
]

__version__ = "0.1.0"
