"""Reading a table as of a time, a version or a tag; tags; database snapshots; what they pin.

Semantics of ``as_of`` (every read that takes it: ``scan``, ``query``, ``to_*``, SQL's
``AT (TIMESTAMP => ...)``):

* an ``int`` is a committed version number;
* a ``datetime`` (or ISO text such as ``"2026-11-20T10:00Z"``, or a ``numpy.datetime64``)
  is an instant in UTC -- an aware one is converted, a naive one *is* UTC -- and names the
  newest version committed at or before it (a version's time is its record's
  ``committed_at``, taken as its commit is made; the times only grow with the version
  numbers, see :meth:`hfq.catalog.records.Manifest.evolve`).  An instant before the table's
  first version on record is an error, never an empty table;
* other text is a tag of the table (:func:`tag`), else the name of a database snapshot
  (:func:`snapshot`) holding the table.

Finding the version of an instant is a binary search over the version numbers up to the
head, reading the commit time of about log2(versions) records -- not a walk of the chain
(ArcticDB#649), nor a listing of the versions (:meth:`Catalog.head` finds the head from the
highest claim).

Tags live in ``<table>/_tags/<name>.json``, snapshots in ``.snapshots/<name>.json`` under the
root; each is created once (create-if-absent) and names exact versions (and the table's id,
so a dropped and recreated table's tag is not mistaken for the new one's).  ``vacuum`` keeps
every version a tag or a snapshot names (:func:`pinned`).

Examples
--------
>>> import datetime as dt
>>> instant("2026-11-20T10:00Z")
datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.timezone.utc)
>>> instant(dt.datetime(2026, 11, 20, 11, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))))
datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.timezone.utc)
>>> instant("paper-v1") is None                      # not a time: a tag or snapshot name
True
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from hfq.catalog.catalog import Catalog
from hfq.errors import ArgumentError, HfqError, TableNotFoundError
from hfq.storage.store import temp_name

__all__ = ["SNAPSHOTS", "TAGS", "as_of", "committed", "drop_snapshot", "drop_tag", "instant",
           "pinned",
           "snapshot", "snapshots", "tag", "tags"]

TAGS = "_tags"
SNAPSHOTS = ".snapshots"
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,127}$")


def instant(value: Any) -> dt.datetime | None:
    """``value`` as an aware UTC datetime when it is one (a datetime, ISO text, a
    ``numpy.datetime64``), None when it is not a time (text that does not parse)."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    elif type(value).__name__ == "datetime64":
        moment = value.astype("datetime64[us]").item()
        if not isinstance(moment, dt.datetime):
            return None
    elif isinstance(value, dt.date):
        moment = dt.datetime.combine(value, dt.time())
    else:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def as_of(catalog: Catalog, name: str, value: Any) -> int:
    """The version of table ``name`` that ``value`` names (see the module's docstring); an
    :class:`~hfq.errors.ArgumentError` (``argument="as_of"``) when it names none."""
    if isinstance(value, bool):
        raise ArgumentError(f"as_of={value!r}: a version, a time or a tag", argument="as_of")
    if isinstance(value, int):
        if not catalog.on_record(name, value):
            raise ArgumentError(f"as_of={value}: table {name!r} has no version {value} on "
                                f"record (versions {_span(catalog.versions(name))})",
                                argument="as_of")
        return value
    moment = instant(value)
    if moment is not None:
        for _ in range(3):   # a version forgotten during the search: look again
            try:
                return _at(catalog, name, moment, value)
            except TableNotFoundError:
                continue
        return _at(catalog, name, moment, value)
    if isinstance(value, str):
        head = catalog.snapshot(name)
        found = _read(catalog, f"{name}/{TAGS}/{value}.json")
        if found is not None and found.get("table_id") == head.table_id:
            return int(found["version"])
        snap = _read(catalog, f"{SNAPSHOTS}/{value}.json")
        if snap is not None and name in snap["tables"]:
            table_id, version = snap["tables"][name]
            if table_id == head.table_id:
                return int(version)
        known = ", ".join(sorted(tags(catalog, name))) or "none"
        raise ArgumentError(f"as_of={value!r}: not a time (ISO 8601, e.g. "
                            f"2026-11-20T10:00Z), nor a tag of table {name!r} (tags: {known}), "
                            "nor a database snapshot holding it", argument="as_of")
    raise ArgumentError(f"as_of={value!r}: a version number, a datetime, ISO text or a tag, "
                        f"not {type(value).__name__}", argument="as_of")


def _at(catalog: Catalog, name: str, moment: dt.datetime, asked: Any) -> int:
    """The newest version committed at or before ``moment``: a search over the version
    numbers up to the head (the times grow with them) that never lists the versions.

    Rounds alternate bisection and interpolation by the commit times known at both ends
    (a steady writer's times are near-linear in the numbers: the guess lands next to the
    answer), so it reads a handful of records on a regular history and at most about
    2 log2(head) on any.  A number with no record
    (forgotten by vacuum, a withdrawn or lost commit) is stepped over by probing the next
    few numbers; a longer run of them hands the search to the listing of the versions on
    record, which is then short.
    """
    head = catalog.head(name)
    if head is None:
        catalog.snapshot(name)   # raises TableNotFoundError naming the tables
        raise AssertionError("unreachable")
    target = _micros(moment)

    def time_of(number: int) -> int:
        return _micros(committed(catalog.committed_at(name, number)))

    high = time_of(head)
    if high <= target:
        return head
    # lo: the newest number known at or before the instant (-1: none yet), low its time;
    # the answer is lo or a number below ub; hi (time high) is after the instant
    lo, low, hi, ub = -1, 0, head, head
    interpolate = False
    while ub - lo > 1:
        if interpolate and lo >= 0:
            guess = lo + (target - low) * (hi - lo) // max(high - low, 1)
            mid = min(max(guess, lo + 1), ub - 1)
        else:
            mid = (lo + ub) // 2
        probe = _present(catalog, name, mid, ub - 1, head)
        if probe is None:   # a long run of numbers with no record: list what is left
            return _listed(catalog, name, moment, asked, target)
        if probe >= ub:     # none in [mid, ub)
            ub = mid
        elif (at := time_of(probe)) > target:
            ub, hi, high = mid, probe, at
        else:
            lo, low = probe, at
        interpolate = not interpolate
    if lo < 0:
        return _listed(catalog, name, moment, asked, target)   # (names the first version)
    return lo


_STEP_OVER = 8
"""How many numbers without a record the search steps over before it lists the versions."""


def _present(catalog: Catalog, name: str, start: int, hi: int, head: int) -> int | None:
    """The first number in ``[start, hi]`` whose record is there (``hi + 1``: none), looking
    at most :data:`_STEP_OVER` numbers ahead (None: those are all absent and more remain)."""
    last = min(hi, start + _STEP_OVER - 1)
    for number in range(start, last + 1):
        if catalog.on_record(name, number, head=head):
            return number
    return hi + 1 if last == hi else None


def _listed(catalog: Catalog, name: str, moment: dt.datetime, asked: Any, target: int) -> int:
    """:func:`_at` over the listing of the versions on record."""
    versions = catalog.versions(name)
    if not versions:
        catalog.snapshot(name)   # raises TableNotFoundError naming the tables
    lo, hi = 0, len(versions)
    while lo < hi:   # first index whose time is after the instant
        mid = (lo + hi) // 2
        if _micros(committed(catalog.committed_at(name, versions[mid]))) <= target:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        first = catalog.version(name, versions[0])
        when = committed(first.committed_at)
        why = "the table was created then" if first.version == 0 else \
            "older versions were forgotten by vacuum (keep_for= keeps them)"
        raise ArgumentError(f"as_of={asked!r} ({moment.isoformat()}) is before table "
                            f"{name!r}'s first version on record: version {first.version} "
                            f"committed at {when.isoformat()} ({why})", argument="as_of")
    return versions[lo - 1]


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def committed(seconds: float) -> dt.datetime:
    """A version's ``committed_at`` as the aware UTC datetime it is shown as (to the
    microsecond): an ``as_of`` equal to it names that version."""
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


def _micros(moment: dt.datetime) -> int:
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


def _span(versions: list[int]) -> str:
    return f"{versions[0]}..{versions[-1]}" if versions else "none"


def _read(catalog: Catalog, rel: str) -> dict[str, Any] | None:
    try:
        return dict(json.loads(catalog.store.read_bytes(rel)))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise HfqError(f"catalog file {catalog.store.path(rel)} is damaged: {exc}") from exc


def _check_label(label: str, what: str) -> str:
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise ArgumentError(f"{what} name {label!r}: 1-128 letters, digits, '_', '-' or '.', "
                            "starting with a letter (so it is never read as a time)",
                            argument=what)
    return label


def _create(catalog: Catalog, rel: str, body: Mapping[str, Any], what: str) -> None:
    """Write ``rel`` once (create-if-absent): an existing one is an error."""
    store = catalog.store
    store.makedirs(rel.rsplit("/", 1)[0])
    tmp = temp_name(rel)
    try:
        store.write_bytes(tmp, json.dumps(body, separators=(",", ":")).encode())
    except BaseException:
        store.remove(tmp)
        raise
    if not store.create_exclusive(tmp, rel):
        raise ArgumentError(f"{what} {body['name']!r} exists already ({store.path(rel)}); "
                            f"drop it first or pick another name", argument=what)


# -- tags -------------------------------------------------------------------------------------
def tag(catalog: Catalog, name: str, label: str, version: int, *, user: str | None = None,
        message: str | None = None) -> dict[str, Any]:
    """Tag ``version`` of table ``name`` as ``label`` (once: a tag never moves)."""
    _check_label(label, "tag")
    m = catalog.snapshot(name, version)
    body = {"name": label, "table": name, "table_id": m.table_id, "version": m.version,
            "at": time.time(), "user": user, "message": message}
    _create(catalog, f"{name}/{TAGS}/{label}.json", body, "tag")
    catalog._tell({f"{name}/{TAGS}/{label}.json": json.dumps(body).encode()}, [])
    return body


def tags(catalog: Catalog, name: str) -> dict[str, dict[str, Any]]:
    """The tags of table ``name`` (this incarnation's): label -> what :func:`tag` wrote."""
    head = catalog.snapshot(name)
    out = {}
    for entry in catalog.store.listdir(f"{name}/{TAGS}"):
        if entry.endswith(".json") and not entry.startswith("."):
            body = _read(catalog, f"{name}/{TAGS}/{entry}")
            if body is not None and body.get("table_id") == head.table_id:
                out[entry[:-5]] = body
    return out


def drop_tag(catalog: Catalog, name: str, label: str) -> None:
    """Remove tag ``label`` of table ``name`` (its version may then be forgotten)."""
    rel = f"{name}/{TAGS}/{_check_label(label, 'tag')}.json"
    if not catalog.store.exists(rel):
        raise ArgumentError(f"table {name!r} has no tag {label!r}", argument="tag")
    catalog.store.remove(rel)
    catalog._tell({}, [rel])


# -- database snapshots -------------------------------------------------------------------------
def snapshot(catalog: Catalog, label: str, *, user: str | None = None,
             message: str | None = None) -> dict[str, Any]:
    """Pin the newest version of every table as database snapshot ``label``: each table's
    head read in turn (there is no transaction across tables: a commit landing meanwhile is
    in or out depending on whether its table was read before or after it)."""
    _check_label(label, "snapshot")
    pins = {}
    for name in catalog.tables():
        m = catalog.snapshot(name)
        pins[name] = [m.table_id, m.version]
    body = {"name": label, "at": time.time(), "user": user, "message": message,
            "tables": pins}
    _create(catalog, f"{SNAPSHOTS}/{label}.json", body, "snapshot")
    return body


def snapshots(catalog: Catalog) -> dict[str, dict[str, Any]]:
    """Every database snapshot: label -> what :func:`snapshot` wrote."""
    out = {}
    for entry in catalog.store.listdir(SNAPSHOTS):
        if entry.endswith(".json") and not entry.startswith("."):
            body = _read(catalog, f"{SNAPSHOTS}/{entry}")
            if body is not None:
                out[entry[:-5]] = body
    return out


def drop_snapshot(catalog: Catalog, label: str) -> None:
    """Remove database snapshot ``label`` (its versions may then be forgotten)."""
    rel = f"{SNAPSHOTS}/{_check_label(label, 'snapshot')}.json"
    if not catalog.store.exists(rel):
        raise ArgumentError(f"no database snapshot {label!r}", argument="snapshot")
    catalog.store.remove(rel)


def pinned(catalog: Catalog, name: str) -> set[int]:
    """The versions of table ``name`` that a tag or a database snapshot names: what vacuum
    keeps whatever its other rules say."""
    head = catalog.snapshot(name)
    out = {int(t["version"]) for t in tags(catalog, name).values()}
    for snap in snapshots(catalog).values():
        held = snap["tables"].get(name)
        if held is not None and held[0] == head.table_id:
            out.add(int(held[1]))
    return out
