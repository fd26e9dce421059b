"""Partition files on a node-local root: the store backends, fragments, encodings, sorting."""

from hfq.storage.fragment import encode_fragment, put_file, read_fragment, verify_file
from hfq.storage.store import FsspecStore, LocalStore, Store, open_store

__all__ = ["FsspecStore", "LocalStore", "Store", "encode_fragment", "open_store", "put_file",
           "read_fragment", "verify_file"]
