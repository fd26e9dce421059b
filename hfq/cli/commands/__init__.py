"""The ``hfq`` commands, one module per group; :data:`COMMANDS` registers them.

A command's place in :data:`COMMANDS` is its place in ``hfq --help``.  Adding one: see
:mod:`hfq.cli`.
"""

from __future__ import annotations

from hfq.cli.args import Command
from hfq.cli.commands import (
    demo,
    history,
    ingest,
    live,
    maintenance,
    quality,
    scan,
    service,
    sql,
    tables,
)

__all__ = ["COMMANDS"]

COMMANDS: list[Command] = [
    demo.DEMO,
    demo.SYNTH,
    tables.CREATE,
    ingest.INGEST,
    live.PUBLISH,
    live.TAIL,
    tables.TABLES,
    tables.INFO,
    tables.PARTITIONS,
    history.HISTORY,
    scan.SCAN,
    maintenance.COMPACT,
    maintenance.VERIFY,
    maintenance.REBALANCE,
    maintenance.REPAIR,
    maintenance.CHECK,
    maintenance.VACUUM,
    tables.DROP,
    quality.QUALITY,
    sql.SQL,
    service.SERVE,
    service.USER,
    service.GRANT,
    service.REVOKE,
    service.QUOTA,
]
"""Every command, in the order ``hfq --help`` lists them: one line each."""
