"""Data in: DataFrames and CSV -> rows conformed to the schema, handed to the write operator
(:mod:`hfq.write`) that routes, sorts, encodes and commits them."""

from hfq.ingest.csv import LoadReport, load_csv
from hfq.ingest.frames import iter_arrow_batches

__all__ = ["LoadReport", "iter_arrow_batches", "load_csv"]
