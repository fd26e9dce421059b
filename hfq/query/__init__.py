"""Planning (pruning, projection) and executing scans."""

from hfq.query.plan import Filters, Plan, Unit
from hfq.query.scan import Scan

__all__ = ["Filters", "Plan", "Scan", "Unit"]
