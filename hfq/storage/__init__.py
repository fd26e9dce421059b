"""Partition files on a node-local root: the store primitives, fragments, encodings, sorting."""

from hfq.storage.fragment import read_fragment, verify_fragment, write_fragment
from hfq.storage.store import Store

__all__ = ["Store", "read_fragment", "verify_fragment", "write_fragment"]
