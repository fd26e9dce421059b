"""Live data: ticks published all day, durable on acknowledgement, queryable at once with the
stored history, delivered to subscribers, turned into bars as they arrive (docs/live.md).

* :class:`Publisher` (``t.publisher()``): batches logged on every replica node before
  ``publish`` returns; idempotent by (publisher, sequence number).
* ``t.scan()``, ``t.query()``, ``db.sql()`` read the live rows with the files, one snapshot.
* :class:`Subscription` (``t.subscribe()``): record batches as they are published, from an
  offset, exactly once across a subscriber's restarts.
* :class:`TimeSeriesEngine` (bars) and :class:`ReactiveStateEngine` (running state).
* :func:`write_down` (``t.write_down(date)``): a day's live rows into files, one commit.
* :func:`replay`: stored days published again in time order, for backtests.

Examples
--------
>>> import hfq, tempfile
>>> db = hfq.connect(tempfile.mkdtemp())
>>> t = db.create_table("q", hfq.schemas.TAQ, partition_by=hfq.Value("date"))
>>> pub = t.publisher(name="feed")
>>> pub.publish(hfq.synth.taq_table(rows_per_day=50, symbols=2))
1
>>> next(iter(t.subscribe(start="sod"))).num_rows
50
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hfq.live.log import LiveLogError
from hfq.live.node import LiveSnapshotExpiredError, PublishConflictError, SubscriberLagError
from hfq.live.publisher import Publisher
from hfq.live.snapshot import LiveRowsUnavailableError
from hfq.live.subscribe import Subscription, parse_offset
from hfq.live.writedown import WriteDown, live_days, write_down, write_down_due

if TYPE_CHECKING:
    from hfq.live.bars import TimeSeriesEngine
    from hfq.live.replay import Replay, replay
    from hfq.live.state import (
        ReactiveStateEngine,
        State,
        cumsum,
        ema,
        rolling_mean,
        rolling_std,
        zscore,
    )

_LAZY = {"TimeSeriesEngine": "hfq.live.bars", "Replay": "hfq.live.replay",
         "replay": "hfq.live.replay", "ReactiveStateEngine": "hfq.live.state",
         "State": "hfq.live.state", "cumsum": "hfq.live.state", "ema": "hfq.live.state",
         "rolling_mean": "hfq.live.state", "rolling_std": "hfq.live.state",
         "zscore": "hfq.live.state"}


def __getattr__(name: str) -> Any:
    """The engines and the replay load the query engine: on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hfq.live' has no attribute {name!r}")


__all__ = ["LiveLogError", "LiveRowsUnavailableError", "LiveSnapshotExpiredError", "Publisher",
           "PublishConflictError", "ReactiveStateEngine", "Replay", "State",
           "SubscriberLagError", "Subscription", "TimeSeriesEngine", "WriteDown", "cumsum",
           "ema", "live_days", "parse_offset", "replay", "rolling_mean", "rolling_std",
           "write_down", "write_down_due", "zscore"]
