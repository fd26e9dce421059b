"""What the runtime runs: picklable per-partition tasks, and the node context they get.

The runtime knows no query, ingest or analytics code.  A *task* is any picklable callable
``task(node, unit)``: ``node`` is a :class:`NodeContext` (the node's store, its cache of decoded
partitions, and a way to reach the other nodes), ``unit`` anything shaped like a
:class:`WorkUnit` (a partition and the fragments it needs, so the runtime can tell which nodes
can run it).  A *call* is ``fn(node, *args)`` on one node (maintenance: verify, sweep, copies).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import polars as pl
import pyarrow as pa

from hfq.catalog.records import Fragment
from hfq.errors import CorruptPartitionError
from hfq.runtime.services import node_services
from hfq.storage.cache import PartitionCache
from hfq.storage.owned import arrow_owned
from hfq.storage.store import Store

if TYPE_CHECKING:
    from hfq.runtime.nodes import Nodes

__all__ = ["BadCopy", "NodeContext", "StoreCall", "WorkUnit", "dead_actor_errors", "dumps_task",
           "frame_reducer", "ship", "unship"]

T = TypeVar("T")


class WorkUnit(Protocol):
    """One partition's worth of work: where it can run is where all its fragments are."""

    @property
    def partition(self) -> str: ...

    @property
    def fragments(self) -> Sequence[Fragment]: ...

    @property
    def rows(self) -> int: ...


@dataclass
class NodeContext:
    """The node a task or call runs on: its name, its root, its cache, the other nodes."""

    name: str | None
    store: Store
    cache: PartitionCache | None
    _nodes: Callable[[], Nodes]

    def nodes(self) -> Nodes:
        """Every node, from this one's point of view (to write a result to replicas)."""
        return self._nodes()

    def service(self, name: str, make: Callable[[], T]) -> T:
        """The object ``make()`` built the first time this process asked for service
        ``name`` of this node (see :mod:`hfq.runtime.services`): state kept between calls."""
        return node_services(self.name, self.store.root).get(name, make)


@dataclass(frozen=True)
class StoreCall:
    """A call of ``fn(store, *args)`` on the node's store: how functions of lower layers that
    know only a :class:`~hfq.storage.store.Store` (sweeps, listings) run on a node."""

    fn: Callable[..., Any]

    def __call__(self, node: NodeContext, *args: Any) -> Any:
        return self.fn(node.store, *args)


class _Frame:
    """A polars DataFrame in transit, as Arrow (pickling a DataFrame is ~70x slower)."""

    __slots__ = ("table",)

    def __init__(self, table: pa.Table) -> None:
        self.table = table


@dataclass(frozen=True)
class BadCopy:
    """What a server returns for a unit whose copy on its node is damaged, in place of the
    unit's value: the executor runs the unit on another holder and has the copy repaired."""

    error: CorruptPartitionError


def ship(value: Any) -> Any:
    """Make a task's result cheap to send: a polars DataFrame travels as Arrow."""
    return _Frame(value.to_arrow()) if isinstance(value, pl.DataFrame) else value


def unship(value: Any) -> Any:
    return _frame_from_arrow(value.table) if isinstance(value, _Frame) else value


def _frame_from_arrow(table: pa.Table) -> pl.DataFrame:
    """A frame over a copy of ``table`` in memory Arrow owns (:func:`arrow_owned`)."""
    return cast(pl.DataFrame, pl.from_arrow(arrow_owned(table)))


def _frame_from_polars(data: bytes) -> pl.DataFrame:
    return pl.DataFrame.deserialize(io.BytesIO(data))


def frame_reducer(frame: pl.DataFrame) -> tuple[Any, tuple[Any]]:
    """How a task pickles a polars frame it holds (a pickler's ``dispatch_table`` entry): as
    Arrow, ~70x faster than ``DataFrame.serialize`` and rebuilt over memory Arrow owns (see
    :func:`arrow_owned`).  Never through ``serialize`` on the frame itself: with columns
    chunked differently it realigns them in place on polars' pool, GIL held, and a pool thread
    freeing Python-owned memory waits for the GIL forever.  Dtypes Arrow lacks (Int128,
    UInt128, Object) go through ``serialize`` of a rechunked copy (aligned: nothing to free)."""
    if not any("Object" in str(dtype) for dtype in frame.dtypes):   # (as Arrow: pointers)
        try:
            return _frame_from_arrow, (frame.to_arrow(),)
        except (pa.ArrowException, pl.exceptions.PolarsError):   # a dtype without Arrow form
            pass
    return _frame_from_polars, (frame.rechunk().serialize(),)


def dumps_task(task: Any) -> bytes:
    """``task`` pickled by Ray's cloudpickle, the polars frames it holds as Arrow
    (:func:`frame_reducer`), never through ``DataFrame.serialize``."""
    from collections import ChainMap

    from ray import cloudpickle

    class TaskPickler(cloudpickle.CloudPickler):
        dispatch_table = ChainMap({pl.DataFrame: frame_reducer},
                                  cloudpickle.CloudPickler.dispatch_table)

    out = io.BytesIO()
    TaskPickler(out, protocol=cloudpickle.DEFAULT_PROTOCOL).dump(task)
    return out.getvalue()


def dead_actor_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean "that node (or its server) is gone", not "the work failed"."""
    from ray import exceptions as rex
    return tuple(e for e in (rex.RayActorError, rex.ActorUnschedulableError,
                             getattr(rex, "ActorUnavailableError", None),
                             rex.NodeDiedError, rex.ObjectLostError) if e is not None)
