"""What the runtime runs: picklable per-partition tasks, and the node context they get.

The runtime knows no query, ingest or analytics code.  A *task* is any picklable callable
``task(node, unit)``: ``node`` is a :class:`NodeContext` (the node's store, its cache of decoded
partitions, and a way to reach the other nodes), ``unit`` anything shaped like a
:class:`WorkUnit` (a partition and the fragments it needs, so the runtime can tell which nodes
can run it).  A *call* is ``fn(node, *args)`` on one node (maintenance: verify, sweep, copies).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import polars as pl
import pyarrow as pa

from hfq.catalog.records import Fragment
from hfq.errors import CorruptPartitionError
from hfq.runtime.services import node_services
from hfq.storage.cache import PartitionCache
from hfq.storage.store import Store

if TYPE_CHECKING:
    from hfq.runtime.nodes import Nodes

__all__ = ["BadCopy", "NodeContext", "StoreCall", "WorkUnit", "dead_actor_errors", "ship",
           "unship"]

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
    if isinstance(value, _Frame):
        return pl.from_arrow(value.table)
    return value


def dead_actor_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean "that node (or its server) is gone", not "the work failed"."""
    from ray import exceptions as rex
    return tuple(e for e in (rex.RayActorError, rex.ActorUnschedulableError,
                             getattr(rex, "ActorUnavailableError", None),
                             rex.NodeDiedError, rex.ObjectLostError) if e is not None)
