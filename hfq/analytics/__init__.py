"""Analytics that run where the data is: each partition is reduced on its node, only small
partial results travel, and the driver merges them (see :mod:`hfq.reduce`)."""

from hfq.analytics.bars import minute_bars
from hfq.analytics.ols import OLSFit, ols
from hfq.analytics.spread import spread_by_minute

__all__ = ["OLSFit", "minute_bars", "ols", "spread_by_minute"]
