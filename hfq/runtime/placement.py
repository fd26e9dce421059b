"""Where partitions live: rendezvous hashing over node names, deterministic and balanced.

Each (partition, node) pair gets a pseudo-random score from a stable hash; a partition lives on
the ``k`` nodes with the highest scores.  Every process computes the same placement from the same
node names, load spreads evenly in expectation, and when a node joins or leaves only the
partitions whose top ``k`` changed move (about ``k / nodes`` of them) -- which is what
:meth:`hfq.Database.rebalance` does (:func:`rebalanced`: with no node change, nothing moves).

>>> place("2007-08-01/h03", ["a", "b", "c"], 2) == place("2007-08-01/h03", ["c", "b", "a"], 2)
True
>>> len(set(place("p", ["a", "b", "c"], 2)))
2
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from hfq.errors import HfqError

__all__ = ["DEFAULT_REPLICAS", "place", "rebalanced", "replica_count"]

DEFAULT_REPLICAS = 2


def _score(partition: str, node: str) -> bytes:
    return hashlib.blake2b(f"{node}\0{partition}".encode(), digest_size=8).digest()


def place(partition: str, nodes: Iterable[str], k: int) -> list[str]:
    """The ``k`` nodes (of ``nodes``) that should hold ``partition``, best first."""
    ranked = sorted(set(nodes), key=lambda n: _score(partition, n), reverse=True)
    return ranked[:k]


def replica_count(requested: int | None, alive: Sequence[str], table: str) -> int:
    """Copies to write: the table's ``replicas`` (default ``min(2, nodes)``)."""
    if not alive:
        raise HfqError("no hfq node is alive to write to")
    if requested is None:
        return min(DEFAULT_REPLICAS, len(alive))
    if requested > len(alive):
        raise HfqError(f"table {table!r} wants {requested} replicas but only {len(alive)} "
                       f"nodes are alive ({', '.join(sorted(alive))}); add nodes or lower "
                       "replicas")
    return requested


def rebalanced(partition: str, holders: Sequence[str], alive: Sequence[str],
               new: Iterable[str], k: int) -> list[str]:
    """Where a partition now held by ``holders`` should be, with ``k`` copies on live nodes.

    Its live holders stay (whatever placed it there: placement, or its source partition's
    nodes for derived tables) unless a node that joined -- ``new``: live nodes that hold
    nothing of any table -- ranks above them, as rendezvous hashing would place it; missing
    copies (holders that died, too few replicas) are re-created on the next live nodes in
    placement order.  With no node change and every copy alive, the holders are returned:
    nothing moves.

    >>> sorted(rebalanced("p", ["b", "a"], ["a", "b", "c"], [], 2))
    ['a', 'b']
    >>> len(rebalanced("p", ["a", "dead"], ["a", "b", "c"], [], 2))
    2
    """
    live = [n for n in holders if n in alive]
    target = place(partition, [*live, *new], k)   # best first, as placement orders them
    for name in place(partition, alive, len(alive)):
        if len(target) >= k:
            break
        if name not in target:
            target.append(name)
    return target
