"""A node's identity: a name kept in its root directory, so it survives Ray restarts.

Ray gives a node a new id every time it starts; hfq needs to know that the node that comes back
is the one whose disk holds the partitions.  The first server to start on a root writes
``<root>/.hfq-node`` (a JSON file with a random name); every later start reads it back.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass

from hfq.errors import HfqError
from hfq.storage.store import Store, temp_name

__all__ = ["ROOT_ENV", "NodeInfo", "code_fingerprint", "node_identity", "root_from_env"]

ROOT_ENV = "HFQ_NODE_ROOT"
_IDENTITY = ".hfq-node"


@dataclass(frozen=True)
class NodeInfo:
    """One hfq node: a stable name, its data root, and where Ray runs it now."""

    name: str
    root: str
    ray_node_id: str | None = None
    cpus: int = 1
    host: str = ""
    code: str = ""
    """Fingerprint of the hfq code the server runs (see :func:`code_fingerprint`)."""


def node_identity(store: Store, *, name: str | None = None) -> str:
    """The name of the node whose root is ``store`` (created on first use, race-free).

    ``name`` is the name given on that first use (default: ``node-`` and 10 random hex
    digits); a root that has one keeps it.

    >>> import tempfile
    >>> from hfq.storage.store import open_store
    >>> store = open_store(tempfile.mkdtemp())
    >>> node_identity(store, name="node-a"), node_identity(store, name="node-b")
    ('node-a', 'node-a')
    """
    for _ in range(2):
        if store.exists(_IDENTITY):
            try:
                data = json.loads(store.read_bytes(_IDENTITY))
                return str(data["name"])
            except (ValueError, KeyError) as exc:
                raise HfqError(f"{store.path(_IDENTITY)} is not a valid hfq node identity "
                               f"file: {exc}") from None
        store.makedirs("")
        tmp = temp_name(_IDENTITY)
        new = name or f"node-{uuid.uuid4().hex[:10]}"
        store.write_bytes(tmp, json.dumps({"name": new, "format": 1}).encode(), sync=True)
        if store.create_exclusive(tmp, _IDENTITY):
            return new
    raise HfqError(f"could not create or read {store.path(_IDENTITY)}")


_FINGERPRINT: list[str] = []


def code_fingerprint() -> str:
    """A hash of hfq's source files: a server running other code than the driver is replaced
    (detached servers outlive the job that started them)."""
    if not _FINGERPRINT:
        import hashlib
        from pathlib import Path
        digest = hashlib.blake2b(digest_size=8)
        package = Path(__file__).resolve().parent.parent
        for path in sorted(package.rglob("*.py")):
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
        _FINGERPRINT.append(digest.hexdigest())
    return _FINGERPRINT[0]


def root_from_env() -> str:
    root = os.environ.get(ROOT_ENV)
    if not root:
        raise HfqError(f"this Ray node has no {ROOT_ENV}: start it with cluster/local.sh, the "
                       f"cluster YAML, or `{ROOT_ENV}=/path/on/local/disk ray start ...`")
    return root
