"""Fault points: named places where a test makes a process crash, fail or pause, deterministically.

Code that must survive a crash calls :func:`point` at the moments that matter (between writing a
fragment and committing it, between reading the head manifest and publishing the next one,
mid-copy in a rebalance...).  Normally a point costs one dictionary lookup and does nothing.  A
test arms it, in its own process with :func:`arm` or in any process it starts (Ray workers
included) through the environment::

    HFQ_FAULTS="catalog.commit.before_publish=crash"            # os._exit(137): a kill -9
    HFQ_FAULTS="write.fragment.after_put=raise@3"                # FaultInjected on the 3rd hit
    HFQ_FAULTS="rebalance.copy.before_commit=pause:/tmp/gate"    # wait until /tmp/gate exists

Several points are separated by commas.  ``@N`` fires on the N-th time the point is reached in
this process (1 by default).  ``pause:PATH`` first creates ``PATH.reached`` (so the test knows the
process is there), then waits for ``PATH`` to appear -- a race made exact without sleeps.

:data:`POINTS` lists every point the code has; :func:`point` refuses names not in it, so a test
cannot arm a point that nothing reaches.
"""

from __future__ import annotations

import os
import pathlib
import threading
import time

from hfq.errors import HfqError

__all__ = ["POINTS", "FaultInjected", "arm", "disarm", "point"]

#: every fault point in hfq, with where it sits
POINTS: dict[str, str] = {
    "catalog.commit.between_claims_and_head": "a commit has read the version claims, not "
                                              "yet the head",
    "catalog.commit.before_publish": "a commit has read the head and written nothing yet",
    "catalog.commit.before_claim": "the next version is published, its number not yet "
                                   "claimed (_claims/<n>)",
    "catalog.commit.after_publish": "the next version is published, listeners not yet told",
    "write.fragment.after_put": "a fragment file is on its nodes, not yet staged",
    "write.before_commit": "every fragment of a write is staged, the commit not yet started",
    "write.abort.before_remove": "a failed write is about to remove what it wrote",
    "change.partition.after_write": "a change (delete, update, overwrite, upsert, a dedup "
                                    "key) wrote a partition's new file, not yet staged",
    "ingest.csv.after_block": "a block of a CSV file is parsed and routed",
    "compact.before_commit": "compacted fragments are written, the replace not yet committed",
    "rebalance.copy.before_commit": "replica copies are made, the move not yet committed",
    "repair.copy.before_swap": "a good copy is fetched, the bad one not yet replaced",
    "vacuum.before_remove": "vacuum has listed the files it will remove",
    "read.batch.after_verify": "a record batch passed its checksum, not yet decoded",
    "engine.node.before_stage": "a query's node stage is about to run on one partition",
    "live.publish.before_send": "a published batch is conformed and split, nothing logged",
    "live.log.before_fsync": "a live log frame is written, not yet fsynced",
    "live.node.after_log": "a node logged its part of a batch, the publisher not yet answered",
    "live.publish.before_ack": "every node logged a batch, publish has not returned",
    "live.writedown.before_commit": "a write-down's files are written, not yet committed",
    "live.writedown.after_commit": "a write-down is committed, the nodes not yet told",
    "live.log.before_truncate": "a node is about to remove a written-down log segment",
    "live.subscribe.after_batch": "a subscriber took a batch, the next not yet fetched",
}

ENV = "HFQ_FAULTS"
_lock = threading.Lock()
_armed: dict[str, str] = {}
_hits: dict[str, int] = {}


class FaultInjected(HfqError, RuntimeError):
    """Raised by a fault point armed with ``raise``."""


def arm(name: str, action: str) -> None:
    """Arm ``name`` here: ``crash``, ``raise`` or ``pause:PATH``, optionally ``@N``."""
    _check(name)
    _parse(action)
    with _lock:
        _armed[name] = action
        _hits.pop(name, None)


def disarm(name: str | None = None) -> None:
    """Disarm one point (or all) armed with :func:`arm` and forget their hit counts."""
    with _lock:
        if name is None:
            _armed.clear()
            _hits.clear()
        else:
            _armed.pop(name, None)
            _hits.pop(name, None)


def point(name: str) -> None:
    """Reach the fault point ``name``: nothing happens unless a test armed it."""
    action = _armed.get(name)
    if action is None:
        env = os.environ.get(ENV)
        if not env:
            return
        action = _from_env(env).get(name)
        if action is None:
            return
    _check(name)
    kind, arg, nth = _parse(action)
    with _lock:
        hits = _hits[name] = _hits.get(name, 0) + 1
    if hits != nth:
        return
    if kind == "crash":
        os._exit(137)
    if kind == "raise":
        raise FaultInjected(f"fault point {name!r} (hit {hits})")
    gate = pathlib.Path(arg)
    pathlib.Path(arg + ".reached").touch()
    while not gate.exists():
        time.sleep(0.01)


def _check(name: str) -> None:
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}; known: {', '.join(sorted(POINTS))}")


def _from_env(env: str) -> dict[str, str]:
    out = {}
    for item in env.split(","):
        if item.strip():
            key, _, value = item.partition("=")
            out[key.strip()] = value.strip()
    return out


def _parse(action: str) -> tuple[str, str, int]:
    body, _, nth = action.partition("@")
    kind, _, arg = body.partition(":")
    nth_ok = not nth or (nth.isdigit() and int(nth) >= 1)   # @0 or @x would never fire
    if kind not in ("crash", "raise", "pause") or (kind == "pause") != bool(arg) or not nth_ok:
        raise ValueError(f"fault action {action!r}: expected crash, raise or pause:PATH, "
                         "optionally followed by @N (N >= 1)")
    return kind, arg, int(nth) if nth else 1
