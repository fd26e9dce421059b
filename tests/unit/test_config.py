"""``config.override`` holds in the context that entered it: threads and asyncio tasks running
at the same time each see their own overrides, never another's (a module-global list leaked
one thread's override into every other).  Interleavings are forced with barriers and events,
never sleeps.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import pytest

from hfq import config

DEFAULT = config.Settings()


def run_threads(*bodies: Callable[[], Any]) -> list[Any]:
    """Run each body in its own thread at once; their results (an exception is raised)."""
    results: list[Any] = [None] * len(bodies)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = bodies[i]()
        except BaseException as exc:  # noqa: BLE001 - raised in the test's thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    if errors:
        raise errors[0]
    return results


def test_two_threads_overriding_at_once_each_see_only_their_own():
    inside = threading.Barrier(3, timeout=30)   # both threads inside, and the main one
    done = threading.Barrier(3, timeout=30)     # everyone has looked

    def thread(**changes: Any) -> tuple[config.Settings, config.Settings]:
        with config.override(**changes) as given:
            inside.wait()   # the other thread's override is in force now too
            seen = config.get()
            done.wait()
        assert given == seen
        return seen, config.get()

    def main() -> config.Settings:
        inside.wait()
        seen = config.get()
        done.wait()
        return seen

    (a, a_after), (b, b_after), here = run_threads(
        lambda: thread(batch_rows=1024), lambda: thread(compression="lz4", threads=3), main)
    assert (a.batch_rows, a.compression, a.threads) == (1024, DEFAULT.compression,
                                                        DEFAULT.threads)
    assert (b.batch_rows, b.compression, b.threads) == (DEFAULT.batch_rows, "lz4", 3)
    assert here == a_after == b_after == config.get() == DEFAULT


def test_the_same_setting_overridden_in_two_threads():
    inside = threading.Barrier(2, timeout=30)

    def thread(rows: int) -> list[int]:
        with config.override(batch_rows=rows):
            inside.wait()
            first = config.get().batch_rows
            with config.override(batch_rows=rows + 1):
                inside.wait()
                nested = config.get().batch_rows
            inside.wait()
            return [first, nested, config.get().batch_rows]

    assert run_threads(lambda: thread(100), lambda: thread(200)) == [[100, 101, 100],
                                                                     [200, 201, 200]]


def test_a_thread_started_inside_an_override_starts_without_it():
    with config.override(batch_rows=1024):
        assert run_threads(lambda: config.get().batch_rows) == [DEFAULT.batch_rows]
        # passed on explicitly: the copied context carries it
        context = contextvars.copy_context()
        assert run_threads(lambda: context.run(lambda: config.get().batch_rows)) == [1024]


def test_copy_context_sees_what_is_in_force_and_keeps_its_own_overrides_inside():
    def inner() -> tuple[int, str, str]:
        with config.override(compression="lz4"):
            inside = config.get().compression
        return config.get().batch_rows, inside, config.get().compression

    with config.override(batch_rows=2048):
        context = contextvars.copy_context()
        assert context.run(inner) == (2048, "lz4", DEFAULT.compression)
        assert config.get().compression == DEFAULT.compression
    assert config.get() == DEFAULT
    # the copy keeps what was in force when it was made, after the block ended here
    assert context.run(inner) == (2048, "lz4", DEFAULT.compression)
    assert config.get() == DEFAULT


def test_asyncio_tasks_inherit_at_creation_and_keep_their_overrides_to_themselves():
    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        a_inside, b_looked = asyncio.Event(), asyncio.Event()

        async def a() -> None:
            with config.override(compression="lz4"):
                a_inside.set()
                await b_looked.wait()   # b looks while a's override is in force
                seen["a"] = config.get().compression, config.get().batch_rows

        async def b() -> None:
            await a_inside.wait()
            seen["b"] = config.get().compression, config.get().batch_rows
            b_looked.set()

        with config.override(batch_rows=512):
            tasks = [asyncio.create_task(a()), asyncio.create_task(b())]
        seen["creator"] = config.get().batch_rows   # its block has ended meanwhile
        await asyncio.gather(*tasks)
        seen["after"] = config.get().compression
        return seen

    seen = asyncio.run(main())
    assert seen == {"a": ("lz4", 512), "b": (DEFAULT.compression, 512),
                    "creator": DEFAULT.batch_rows, "after": DEFAULT.compression}


def test_overrides_unwind_on_errors_and_stand_above_the_environment(monkeypatch):
    monkeypatch.setenv("HFQ_BATCH_ROWS", "4096")
    with pytest.raises(RuntimeError, match="boom"):
        with config.override(batch_rows=10):
            assert config.get().batch_rows == 10
            raise RuntimeError("boom")
    assert config.get().batch_rows == 4096
    with pytest.raises(TypeError, match="unknown settings"):
        with config.override(batch_rowz=1):
            pass
    assert config.get().batch_rows == 4096
