"""The cluster runtime: node identity, placement, pinned servers, and a generic executor of
per-partition tasks with failover (it knows no query, ingest or analytics code).

Importing this package does not import Ray; :mod:`hfq.runtime.connect` (the ways into a
cluster), :mod:`hfq.runtime.cluster` and :mod:`hfq.runtime.server` do.
"""

from hfq.runtime.nodes import Nodes
from hfq.runtime.task import NodeContext, StoreCall, WorkUnit

__all__ = ["NodeContext", "Nodes", "StoreCall", "WorkUnit"]
