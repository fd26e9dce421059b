"""Data in: DataFrames and CSV -> routed, sorted, encoded partition files, committed at once."""

from hfq.ingest.writer import PartitionWriter

__all__ = ["PartitionWriter"]
