"""The cluster runtime: node identity, placement, pinned servers, map-reduce with failover.

Importing this package does not import Ray; :mod:`hfq.runtime.cluster` does.
"""
