"""``numba.njit`` applied on a kernel's first call, so that importing hfq does not import numba.

numba costs about 0.9 s of ``import hfq`` on 2 cores, and a process that never encodes or
decodes a file (the CLI's help, a client of a service, a Ray worker that only plans) never
needs it.  :func:`njit` marks a function as a kernel without importing numba; the first call of
any kernel of a module imports numba and turns every kernel of that module (and of the modules
whose kernels it imported by name) into numba dispatchers, rebinding the module's names, so
that kernels calling kernels compile exactly as under ``numba.njit`` -- with the same options,
the same on-disk cache (``cache=True``: a file, qualified name and line, as before).

Examples
--------
>>> import numpy as np
>>> @njit(cache=False)
... def total(v):
...     s = 0
...     for x in v:
...         s += x
...     return s
>>> total(np.arange(5))
10
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["Kernel", "njit"]

F = TypeVar("F", bound=Callable[..., Any])
_lock = threading.RLock()


class Kernel:
    """A function that ``numba.njit(**options)`` compiles on its module's first kernel call."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.func = func
        self.options = options
        self.dispatcher: Any = None
        functools.update_wrapper(self, func)

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            _compile(self.func.__globals__)
        return self.dispatcher(*args)

    def __repr__(self) -> str:
        state = "not yet compiled" if self.dispatcher is None else "compiled"
        return f"<hfq kernel {self.func.__module__}.{self.func.__qualname__} ({state})>"


def njit(**options: Any) -> Callable[[F], F]:
    """``numba.njit(**options)``, applied when a kernel of the module is first called."""
    def mark(func: F) -> F:
        return cast(F, Kernel(func, options))
    return mark


def _compile(namespace: dict[str, Any]) -> None:
    """Make numba dispatchers of every kernel named in ``namespace`` (a module's globals), the
    kernels it imported from other modules first (by compiling those modules), and put them in
    place of the kernels.  A kernel's ``dispatcher`` is set last, once every name its code may
    call is a dispatcher: a thread that finds it set compiles against dispatchers only."""
    import numba  # the one place hfq.storage imports numba: on first use

    with _lock:
        found = [(name, v) for name, v in list(namespace.items()) if isinstance(v, Kernel)]
        for _, kernel in found:
            home = kernel.func.__globals__
            if home is not namespace and kernel.dispatcher is None:
                _compile(home)
        made = {name: kernel.dispatcher or numba.njit(**kernel.options)(kernel.func)
                for name, kernel in found}
        namespace.update(made)
        for name, kernel in found:
            kernel.dispatcher = made[name]
