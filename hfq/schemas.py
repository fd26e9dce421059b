"""The built-in table schemas (column types and :class:`~hfq.schema.Schema` live in
:mod:`hfq.schema`).

Examples
--------
>>> import hfq
>>> hfq.schemas.TAQ.names[:3]
['symbol', 'date', 'time']
"""

from hfq.schema import DEVICE_INFO, L2, NYSE_QUOTES, NYSE_TRADES, READINGS, TAQ, TRADES

__all__ = ["DEVICE_INFO", "L2", "NYSE_QUOTES", "NYSE_TRADES", "READINGS", "TAQ", "TRADES"]
