"""Planning (pruning, projection) and reading one partition where its files are."""

from hfq.query.plan import Filters, Plan, Unit, make_plan
from hfq.query.read import MapTask, PartitionFunction, ReadSpec, ReadTask, read_unit

__all__ = ["Filters", "MapTask", "PartitionFunction", "Plan", "ReadSpec", "ReadTask", "Unit",
           "make_plan", "read_unit"]
