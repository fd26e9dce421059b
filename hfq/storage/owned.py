"""Arrow memory that Arrow owns: copies of Python-owned bytes, made where they come in.

Memory Ray (or pickle) deserializes, or a numpy array wrapped by ``pa.py_buffer``, reaches
Arrow as ``PyBuffer``s, and freeing one takes the GIL.  A polars frame over such memory hangs
the process when a polars call that waits on its thread pool while holding the GIL has a pool
thread drop the last reference (``DataFrame.serialize``, i.e. pickling a frame whose columns
are chunked differently: it realigns them in place) -- the 2-node fuzz hang, seed 43.  What
these functions return is freed by Arrow's allocator, with no GIL.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["arrow_bytes", "arrow_owned"]


def arrow_owned(table: pa.Table) -> pa.Table:
    """``table`` copied once into one buffer Arrow allocated (an IPC stream read in place).

    What Ray (or pickle) deserializes is Python-owned: each Arrow buffer is a ``PyBuffer``
    over the object store's or a ``bytes``' memory, and freeing it takes the GIL.  A polars
    frame over it hangs the process as soon as a polars call that waits on its thread pool
    with the GIL held (``DataFrame.serialize``, i.e. pickling a frame whose columns' chunks
    differ: it aligns them *in place*) has a pool thread drop the last reference: the pool
    thread waits for the GIL, the GIL's holder for the pool (the 2-node fuzz hang, seed 43).
    Memory Arrow allocated is freed without the GIL.  Costs one memcpy (~20 ms of CPU for
    130 MB) and releases the object store's copy as soon as the caller drops ``table``."""
    options = pa.ipc.IpcWriteOptions(use_threads=False)
    size = pa.MockOutputStream()
    with pa.ipc.new_stream(size, table.schema, options=options) as writer:
        writer.write_table(table)
    buffer = pa.allocate_buffer(size.size())
    with pa.ipc.new_stream(pa.FixedSizeBufferWriter(buffer), table.schema,
                           options=options) as writer:
        writer.write_table(table)
    return pa.ipc.open_stream(buffer).read_all()


def arrow_bytes(data: Any) -> pa.Buffer:
    """``data`` (anything with the buffer protocol: e.g. a numpy view of the object store
    Ray gave) copied into a buffer Arrow allocated: what is decoded from it zero-copy is then
    freed without the GIL (see :func:`arrow_owned`)."""
    view = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    buffer = pa.allocate_buffer(len(view))
    np.frombuffer(buffer, dtype=np.uint8)[:] = view
    return buffer
