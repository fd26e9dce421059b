"""Partition files on a node-local root: the store primitives, fragments, encodings, sorting."""

from hfq.storage.fragment import encode_fragment, put_file, read_fragment, verify_file
from hfq.storage.store import Store

__all__ = ["Store", "encode_fragment", "put_file", "read_fragment", "verify_file"]
