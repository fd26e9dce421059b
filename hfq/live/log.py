"""The live log: what a node has acknowledged, on its disk before the acknowledgement.

A node keeps one log per table in ``<root>/<table>/_live/<table id>/``; each process that
writes to it (a node server, or a driver publishing on its own node) appends to a *stream* of
its own, ``<stream>/``, holding an exclusive lock (``<stream>/LOCK``, ``flock``) while it
lives -- so two processes never append to one file, and any process can tell a stream whose
writer died (its lock is free).  A stream is a sequence of *segment* files
``00000001.seg``, ``00000002.seg`` ... (a new one past ``live_segment_bytes``, and at every
start).

A segment is ``HFQLOG01`` followed by *frames*, one per published batch this node logged::

    b"HQLF" | meta length (u32) | body length (u64) | CRC-32 of meta + body (u32) | meta | body

``meta`` is JSON (:class:`Entry`: publisher, sequence number, the nodes the batch went to,
its digest, one :class:`Slice` per partition and day it holds rows of); ``body`` is a complete
Arrow IPC stream (schema, dictionaries, one record batch: the rows, slice after slice).  A
writer appends frames and fsyncs (:func:`_sync`) before it returns: only then is a batch
acknowledged.  A reader takes frames until the first one that is incomplete or fails its
checksum -- a torn tail, which a writer killed mid-append leaves, is dropped there, like
kdb+'s replay stopping at a bad tail; nothing after it was ever acknowledged.

Examples
--------
>>> import tempfile, pyarrow as pa
>>> d = tempfile.mkdtemp()
>>> w = StreamWriter(d, segment_bytes=1 << 20)
>>> e = Entry("feed", 1, ("node-a",), "d1", (Slice("h0", [0], None, 1, 2, ("node-a",)),), 0.0)
>>> w.append([encode(e, pa.table({"x": [1, 2]}))])
>>> [(got.seq, rows.num_rows) for got, rows, _ in read_frames(w.path(w.segment))]
[(1, 2)]
>>> w.close()
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from hfq import faults
from hfq.errors import HfqError

__all__ = ["Entry", "LiveLogError", "Slice", "StreamWriter", "encode", "read_frames",
           "segments", "stream_alive"]

log = logging.getLogger(__name__)

HEADER = b"HFQLOG01"
FRAME = struct.Struct("<4sIQI")
FRAME_MAGIC = b"HQLF"
LOCK = "LOCK"
_OPTIONS = ipc.IpcWriteOptions()
"""Arrow's defaults, given (else each writer reads two environment variables)."""
_IOV_MAX = 512
"""Buffers one ``writev`` is given (Linux takes up to 1024)."""


class LiveLogError(HfqError, OSError):
    """A live log could not be written (the batch is not acknowledged)."""


@dataclass(frozen=True)
class Slice:
    """The rows one logged batch holds of one partition and day."""

    partition: str
    key: list[Any]
    day: str | None
    """ISO date of the rows (None: a table without a date column)."""
    pseq: int
    """Its number among the slices of this partition from this publisher (1, 2, ...): the
    same on every node, so a reader proves it has every one (see :mod:`hfq.live.snapshot`)."""
    rows: int
    nodes: tuple[str, ...]
    """The nodes this partition's rows of the batch were logged on."""


@dataclass(frozen=True)
class Entry:
    """One published batch as one node logged it: its rows of this node's partitions."""

    pub: str
    seq: int
    nodes: tuple[str, ...]
    """Every node the batch was sent to."""
    digest: str
    """Hash of the whole batch's rows: a retry of (pub, seq) must carry the same."""
    slices: tuple[Slice, ...]
    at: float
    """When the publisher made it (its clock, never decreasing for one publisher)."""
    others: tuple[Slice, ...] = ()
    """The batch's slices logged on other nodes (their rows are not here): every node knows
    every partition's slice numbers, so a slice whose nodes are all gone is missed loudly."""

    def meta(self) -> bytes:
        """The entry as compact JSON (each slice's text put together from remembered
        pieces: a batch has a slice per partition, the same partitions batch after batch)."""
        head = json.dumps({"pub": self.pub, "seq": self.seq, "nodes": list(self.nodes),
                           "digest": self.digest, "at": self.at}, separators=(",", ":"))
        return (f'{head[:-1]},"slices":[{",".join(_slice_text(s) for s in self.slices)}],'
                f'"others":[{",".join(_slice_text(s) for s in self.others)}]}}').encode()

    @staticmethod
    def from_meta(data: bytes) -> Entry:
        m = json.loads(data)
        return Entry(str(m["pub"]), int(m["seq"]), tuple(m["nodes"]), str(m["digest"]),
                     tuple(_slice(x) for x in m["slices"]), float(m["at"]),
                     tuple(_slice(x) for x in m.get("others", ())))


_TEXTS: dict[tuple[Any, ...], str] = {}
"""JSON of a slice's partition, key and day, and of node lists, by value."""


def _slice_text(s: Slice) -> str:
    """``json.dumps([partition, key, day, pseq, rows, nodes])``, compact."""
    where = ("p", s.partition, repr(s.key), s.day)   # repr: 0, 0.0, -0.0, False apart
    nodes = ("n", *s.nodes)
    head, tail = _TEXTS.get(where), _TEXTS.get(nodes)
    if head is None or tail is None:
        if len(_TEXTS) > 1 << 16:
            _TEXTS.clear()
        head = _TEXTS[where] = json.dumps([s.partition, s.key, s.day],
                                          separators=(",", ":"))[:-1]
        tail = _TEXTS[nodes] = json.dumps(list(s.nodes), separators=(",", ":"))
    return f"{head},{int(s.pseq)},{int(s.rows)},{tail}]"


def _slice(x: list[Any]) -> Slice:
    p, k, d, q, r, n = x
    return Slice(p, list(k), d, int(q), int(r), tuple(n))


def encode(entry: Entry, rows: pa.Table) -> tuple[bytes, pa.Buffer]:
    """The frame of ``entry`` whose rows (slice after slice) are ``rows``: its head (frame
    header and meta) and its body, the Arrow IPC stream as Arrow wrote it (not copied: the
    writer hands both to one ``writev``)."""
    sink = pa.BufferOutputStream()
    writer = ipc.RecordBatchStreamWriter(sink, rows.schema, options=_OPTIONS)
    for batch in rows.to_batches(max_chunksize=max(1, rows.num_rows)):
        writer.write_batch(batch)
    writer.close()
    body = sink.getvalue()
    meta = entry.meta()
    crc = zlib.crc32(body, zlib.crc32(meta))
    return FRAME.pack(FRAME_MAGIC, len(meta), body.size, crc) + meta, body


def read_frames(path: str, start: int = 0) -> Iterator[tuple[Entry, pa.Table, int]]:
    """The frames of segment ``path`` from byte ``start`` (0: the beginning): (entry, rows,
    offset after the frame), up to the first incomplete or damaged one."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
    except FileNotFoundError:
        return
    pos, base = 0, start
    if start == 0:
        if data[:len(HEADER)] != HEADER:
            if len(data) >= len(HEADER):
                log.warning("live log %s does not start with %r: skipped", path, HEADER)
            return
        pos = len(HEADER)
    view = memoryview(data)
    while pos + FRAME.size <= len(data):
        magic, meta_len, body_len, crc = FRAME.unpack_from(data, pos)
        end = pos + FRAME.size + meta_len + body_len
        if magic != FRAME_MAGIC or end > len(data):
            break
        meta = view[pos + FRAME.size:pos + FRAME.size + meta_len]
        body = view[pos + FRAME.size + meta_len:end]
        if zlib.crc32(body, zlib.crc32(meta)) != crc:
            break
        try:
            entry = Entry.from_meta(bytes(meta))
            rows = ipc.open_stream(pa.py_buffer(bytes(body))).read_all()
        except (ValueError, KeyError, TypeError, pa.ArrowInvalid) as exc:   # checksum passed
            log.warning("live log %s at byte %d: a frame that cannot be decoded (%s); the "
                        "rest of this segment is skipped", path, base + pos, exc)
            return
        yield entry, rows, base + end
        pos = end
    if pos < len(data):
        log.info("live log %s: %d bytes after byte %d are incomplete or damaged (a torn "
                 "tail, or a frame still being written): not read", path, len(data) - pos,
                 base + pos)


def segments(stream_dir: str) -> list[str]:
    """The segment files of a stream, oldest first."""
    try:
        names = os.listdir(stream_dir)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.endswith(".seg") and n[:-4].isdigit())


def stream_alive(stream_dir: str) -> bool:
    """Does a process hold the stream's lock (its writer is running)?"""
    try:
        fd = os.open(os.path.join(stream_dir, LOCK), os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _sync(fd: int) -> None:
    """Make what was written to ``fd`` durable (a seam tests watch: an acknowledgement must
    come after it)."""
    os.fsync(fd)


class StreamWriter:
    """This process's stream in a log directory: frames appended by group commit.

    Threads call :meth:`append`; one of them (the leader) writes every frame queued so far
    and fsyncs once for all, the others wait for it.  ``group_commit_s`` (> 0): the leader
    first waits that long for more frames.  A failed write or fsync breaks the stream: every
    waiting append raises :class:`LiveLogError`, and so does every later one.
    """

    def __init__(self, log_dir: str, *, segment_bytes: int, group_commit_s: float = 0.0
                 ) -> None:
        self.dir = os.path.join(log_dir, f"{int(time.time() * 1000):013d}-{uuid.uuid4().hex[:8]}")
        os.makedirs(self.dir, exist_ok=True)
        self._lock_fd = os.open(os.path.join(self.dir, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # fresh: never held
        self.segment_bytes = segment_bytes
        self.group_commit_s = group_commit_s
        self.segment = 0
        self._fd = -1
        self._size = 0
        self._cond = threading.Condition()
        self._queue: list[tuple[bytes, pa.Buffer]] = []
        self._queued = 0        # tickets handed out
        self._durable = 0       # tickets whose frames are durable
        self._leading = False
        self._broken: BaseException | None = None
        self._roll_locked()

    def path(self, segment: int) -> str:
        return os.path.join(self.dir, f"{segment:08d}.seg")

    def roll(self) -> None:
        """Close the segment being written and begin the next one."""
        with self._cond:
            self._roll_locked()

    def _roll_locked(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self.segment += 1
        self._fd = os.open(self.path(self.segment), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                           0o644)
        os.write(self._fd, HEADER)
        _sync(self._fd)
        _sync_dir(self.dir)
        self._size = len(HEADER)

    def append(self, frames: Sequence[tuple[bytes, pa.Buffer]]) -> None:
        """Append ``frames``; returns once they are durable (fsynced), raises if they are not."""
        with self._cond:
            if self._broken is not None:
                raise LiveLogError(f"live log stream {self.dir} is unusable: {self._broken}")
            self._queue.extend(frames)
            self._queued += 1
            ticket = self._queued
            while self._durable < ticket:
                if self._broken is not None:
                    raise LiveLogError(f"live log stream {self.dir}: {self._broken}")
                if self._leading:
                    self._cond.wait()
                    continue
                self._leading = True
                if self.group_commit_s > 0:
                    self._cond.wait(self.group_commit_s)
                batch, upto = self._queue, self._queued
                self._queue = []
                self._cond.release()
                try:
                    self._write(batch)
                except BaseException as exc:
                    self._cond.acquire()
                    self._broken = exc
                    self._leading = False
                    self._cond.notify_all()
                    raise LiveLogError(f"live log stream {self.dir}: writing {len(batch)} "
                                       f"frame(s) failed: {exc}") from exc
                self._cond.acquire()
                self._durable = upto
                self._leading = False
                self._cond.notify_all()

    def _write(self, frames: list[tuple[bytes, pa.Buffer]]) -> None:
        if self._size > self.segment_bytes:
            self._roll_locked()
        parts = [memoryview(p) for frame in frames for p in frame]
        size = sum(p.nbytes for p in parts)
        try:
            while parts:   # writev may write less than asked: go on from where it stopped
                written = os.writev(self._fd, parts[:_IOV_MAX])
                while parts and written >= parts[0].nbytes:
                    written -= parts[0].nbytes
                    parts.pop(0)
                if written:
                    parts[0] = parts[0][written:]
            faults.point("live.log.before_fsync")
            _sync(self._fd)
        except BaseException:
            # what was not acknowledged goes: a reader (or a replay) never finds it
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise
        self._size += size

    def close(self) -> None:
        with self._cond:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self._lock_fd >= 0:
                os.close(self._lock_fd)   # releases the lock
                self._lock_fd = -1
            self._broken = self._broken or HfqError("closed")


def _sync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        _sync(fd)
    finally:
        os.close(fd)
