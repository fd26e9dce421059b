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
from hfq.table import Table

if TYPE_CHECKING:
    from hfq import engine
    from hfq.engine import Query, bucket, minute_of_day  # the lazy query, time buckets
    from hfq.live.replay import replay  # market-data replay through the engine
    from hfq.service.serving import serve  # the shared service (hfq serve)


def __getattr__(name: str) -> Any:
    """``hfq.engine``, :class:`Query` and the time buckets load on first use: a process
    that does not query does not pay for the query engine's imports."""
    if name in ("engine", "Query", "bucket", "minute_of_day"):
        import importlib
        engine = importlib.import_module("hfq.engine")
        return engine if name == "engine" else getattr(engine, name)
    if name == "serve":   # the service (Flight, argon2) loads when one is started
        import importlib
        return importlib.import_module("hfq.service.serving").serve
    if name == "replay":   # hfq.live.replay: it reads through the engine
        import importlib
        return importlib.import_module("hfq.live.replay").replay
    raise AttributeError(f"module 'hfq' has no attribute {name!r}")

__all__ = [
    "Compo", "Database", "Hash", "HfqError", "Query", "Range", "Table", "Value", "config",
    "connect", "errors", "quality", "reduce", "schema", "schemas", "synth",
    "bucket", "engine", "minute_of_day", "replay", "serve",
]

__version__ = "0.1.0"

#: The public surface: each public module and the names in it users may rely on.  The API
#: reference (``docs/api/``) documents exactly these, each callable with an example that runs
#: (``tests/docs/test_api_docs.py`` holds both to this list); everything else -- other modules,
#: other names -- is internal and may change without notice.
PUBLIC: dict[str, tuple[str, ...]] = {
    "hfq": ("connect", "Database", "Table", "Query", "Value", "Hash", "Range", "Compo",
            "HfqError", "bucket", "minute_of_day", "serve"),
    "hfq.engine": ("Query", "GroupBy", "bucket", "minute_of_day"),
    "hfq.reduce": ("Reducer", "Count", "Sum", "Mean", "Var", "Std", "Min", "Max", "First",
                   "Last", "WeightedMean", "Grouped", "OLSMoments", "as_reducer"),
    "hfq.analytics": ("spread_by_minute", "minute_bars", "ols", "OLSFit"),
    "hfq.quality": ("report", "clean_quotes", "Rules", "QualityReport"),
    "hfq.partition": ("Value", "Hash", "Range", "Compo"),
    "hfq.schema": ("Schema", "ColumnType", "SYMBOL", "CHAR", "STRING", "DATE", "SECOND", "TIME",
                   "DATETIME", "TIMESTAMP", "BOOL", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE"),
    "hfq.schemas": ("TAQ", "TRADES", "L2", "READINGS", "DEVICE_INFO"),
    "hfq.synth": ("taq_batches", "taq_table", "trades_table", "write_taq_csv", "taq_csv_files",
                  "l2_batches", "write_l2_csv", "readings_batches", "write_readings_csv",
                  "device_info_table", "write_device_info_csv"),
    "hfq.config": ("Settings", "get", "override"),
    "hfq.errors": ("HfqError", "ArgumentError", "CommitConflictError", "CorruptPartitionError",
                   "CsvError", "DuplicateKeyError", "DuplicateLoadError", "InvalidNameError",
                   "ManifestError", "NodeUnavailableError", "PartitionUnavailableError",
                   "QueryError", "SchemaMismatchError", "SqlError", "TableExistsError",
                   "TableNotFoundError", "UnsafePathError", "WriteError", "AccessDeniedError",
                   "AuthenticationError", "QuotaExceededError"),
    "hfq.testing": ("local_cluster",),
    "hfq.testing.strategies": ("taq_tables", "symbols", "prices", "partitioned",
                               "reducer_values", "merge_trees", "HOSTILE_SYMBOLS"),
    "hfq.demo": ("example_quotes", "plot_spread"),
    "hfq.live": ("Publisher", "Subscription", "TimeSeriesEngine", "ReactiveStateEngine",
                 "cumsum", "ema", "rolling_mean", "rolling_std", "zscore", "replay",
                 "write_down_due", "live_days", "parse_offset"),
}
