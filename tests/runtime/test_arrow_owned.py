"""Frames that come out of Ray (or any pickle) are over memory Arrow owns, and a task's frames
pickle as Arrow: pickling such a frame cannot hang the process.

The hang (2-node fuzz run, seed 43, dataset 43065): a polars frame over Python-owned Arrow
memory (``PyBuffer``s: what Ray's zero-copy deserialization of a table gives), its columns
chunked differently, then ``pickle.dumps(frame)``.  ``DataFrame.serialize`` aligns the
columns' chunks *in place* on polars' thread pool while holding the GIL; a pool thread drops
the old chunks' last reference, ``PyBuffer::~PyBuffer`` takes ``PyGILState_Ensure``, and each
waits for the other forever.  Each case runs in a subprocess under a timeout: a hang fails it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

from hfq.runtime.task import _Frame, dumps_task, frame_reducer, unship
from hfq.storage.owned import arrow_owned

pytestmark = pytest.mark.timeout(300)

# a table as Ray hands it back: rebuilt over Python-owned copies of its buffers (PyBuffers)
_SETUP = textwrap.dedent("""
    import pickle, numpy as np, pyarrow as pa, polars as pl

    def from_ray(table):
        buffers = []
        data = pickle.dumps(table, protocol=5, buffer_callback=buffers.append)
        return pickle.loads(data, buffers=[bytearray(b.raw()) for b in buffers])

    def table(i, n=10):
        return pa.table({"x": np.arange(i * n, i * n + n, dtype=np.float64),
                         "y": np.arange(n, dtype=np.int64)})

    def misaligned(frames):
        # columns chunked differently: serialize realigns them in place, on polars' pool
        whole = pl.concat(frames, rechunk=False)
        return whole.with_columns(pl.Series("z", np.arange(whole.height, dtype=np.float64)))
""")


def _run(body: str, timeout: float = 40.0) -> str:
    """``body`` after :data:`_SETUP` in a fresh interpreter; a hang is a failure."""
    code = _SETUP + textwrap.dedent(body)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung (killed after {timeout:.0f} s): pickling a polars frame over "
                    "Python-owned Arrow memory")
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_frame_unshipped_from_ray_pickles_without_hanging():
    out = _run("""
        from hfq.runtime.task import _Frame, unship
        frames = [unship(_Frame(from_ray(table(i)))) for i in range(3)]
        frame = misaligned(frames)
        del frames
        assert frame.n_chunks("all") == [3, 3, 1], frame.n_chunks("all")
        back = pickle.loads(pickle.dumps(frame))
        assert back.equals(frame)
        print("ok", back.height)
    """)
    assert out.split() == ["ok", "30"]


def test_a_task_holding_a_frame_over_python_owned_memory_pickles_without_hanging():
    out = _run("""
        from hfq.runtime.task import dumps_task
        from ray import cloudpickle
        frames = [pl.from_arrow(from_ray(table(i)), rechunk=False) for i in range(3)]
        frame = misaligned(frames)   # over PyBuffers, as a frame a local read could build
        del frames
        task = {"frames": (frame,)}
        back = cloudpickle.loads(dumps_task(task))["frames"][0]
        assert back.equals(frame)
        print("ok", back.height)
    """)
    assert out.split() == ["ok", "30"]


def test_the_reproducer_still_hangs_without_the_fix():
    """The reproducer is real: the same frame built without :func:`arrow_owned` hangs
    ``pickle.dumps`` (this polars, 2.1: if a polars release stops holding the GIL there,
    this test says so and the copies can be reconsidered)."""
    code = _SETUP + textwrap.dedent("""
        frames = [pl.from_arrow(from_ray(table(i)), rechunk=False) for i in range(3)]
        frame = misaligned(frames)
        del frames
        print("pickling", flush=True)
        pickle.dumps(frame)
        print("done", flush=True)
    """)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=20)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        assert "pickling" in out and "done" not in out
        return
    pytest.fail(f"pickling did not hang (rc {done.returncode}): polars no longer holds the "
                "GIL there -- " + done.stdout + done.stderr[-500:])


def _dtypes_frame() -> pl.DataFrame:
    return pl.DataFrame({
        "e": pl.Series(["a", "b", None], dtype=pl.Enum(["b", "a", "c"])),
        "c": pl.Series(["x", "y", "x"], dtype=pl.Categorical),
        "d": pl.Series([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")],
                       dtype=pl.Decimal(10, 2)),
        "t": [dt.time(1, 2, 3), None, dt.time(23, 59)],
        "du": pl.Series([dt.timedelta(seconds=1), None, dt.timedelta(days=2)],
                        dtype=pl.Duration("ns")),
        "ts": pl.Series([dt.datetime(2020, 1, 1), None, dt.datetime(2021, 1, 1, 9, 30)]
                        ).dt.replace_time_zone("America/New_York"),
        "da": [dt.date(2020, 1, 1), None, dt.date(1, 1, 1)],
        "l": [[1, 2], None, []],
        "s": [{"a": 1, "b": "x"}, None, {"a": 2, "b": None}],
        "u8": pl.Series([1, 2, 3], dtype=pl.UInt8),
        "f32": pl.Series([1.5, None, float("nan")], dtype=pl.Float32),
        "n": [None, None, None],
        "b": [b"x", None, b""],
        "str": ["a", None, "c" * 40],
    })


def _task_round_trip(frame: pl.DataFrame) -> pl.DataFrame:
    from ray import cloudpickle
    return cloudpickle.loads(dumps_task({"f": frame}))["f"]


@pytest.mark.parametrize("rows", [3, 0])
def test_a_task_frame_keeps_its_dtypes(rows):
    frame = _dtypes_frame().head(rows)
    assert frame_reducer(frame)[0].__name__ == "_frame_from_arrow"
    back = _task_round_trip(frame)
    assert back.schema == frame.schema
    assert_frame_equal(back, frame)


def test_a_task_frame_without_an_arrow_form_goes_through_serialize():
    frame = pl.DataFrame({"i": pl.Series([1, None, -(2 ** 100)], dtype=pl.Int128),
                          "x": [1.0, 2.0, 3.0]})
    assert frame_reducer(frame)[0].__name__ == "_frame_from_polars"
    assert_frame_equal(_task_round_trip(frame), frame)


def test_a_task_frame_of_objects_is_refused_as_before():
    """Object columns export to Arrow as their pointers: never that way."""
    frame = pl.DataFrame({"o": pl.Series([object(), 1], dtype=pl.Object)})
    with pytest.raises(pl.exceptions.ComputeError):
        dumps_task({"f": frame})


def test_unship_keeps_the_table_and_its_dtypes():
    frame = _dtypes_frame()
    table = frame.to_arrow()
    back = unship(_Frame(table))
    assert_frame_equal(back, frame)
    owned = arrow_owned(table)
    assert owned.schema.equals(table.schema, check_metadata=True)
    assert owned.drop_columns(["f32"]).equals(table.drop_columns(["f32"]))   # NaN != NaN
    assert unship(np.int64(3)) == 3


def test_arrow_owned_is_one_buffer_not_the_input_memory():
    data = bytearray(np.arange(1000, dtype=np.int64).tobytes())
    table = pa.table({"x": pa.Array.from_buffers(pa.int64(), 1000, [None, pa.py_buffer(data)])})
    owned = arrow_owned(table)
    assert owned.equals(table)
    address = owned.column("x").chunks[0].buffers()[1].address
    assert address != table.column("x").chunks[0].buffers()[1].address
    data[:8] = (77).to_bytes(8, "little")   # the input changes; the copy does not
    assert owned.column("x")[0].as_py() == 0 and pickle.loads(pickle.dumps(owned)).equals(owned)


def test_arrow_bytes_copies_into_arrow_memory():
    from hfq.storage.owned import arrow_bytes
    data = np.frombuffer(bytearray(b"abcdefgh" * 3), dtype=np.uint8)
    buffer = arrow_bytes(data)
    assert isinstance(buffer, pa.Buffer) and buffer.to_pybytes() == b"abcdefgh" * 3
    assert buffer.address != data.ctypes.data
    assert arrow_bytes(np.zeros(0, dtype=np.uint8)).size == 0


def test_a_table_from_a_server_is_kept_over_arrow_memory():
    from hfq.runtime.executor import _owned
    data = bytearray(np.arange(4, dtype=np.int64).tobytes())
    table = pa.table({"x": pa.Array.from_buffers(pa.int64(), 4, [None, pa.py_buffer(data)])})
    kept = _owned(table)
    assert kept.equals(table)
    assert kept.column("x").chunks[0].buffers()[1].address != \
        table.column("x").chunks[0].buffers()[1].address
    frame = _Frame(table)
    assert _owned(frame) is frame and _owned(None) is None   # frames: unship's work
