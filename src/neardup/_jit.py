"""Compiled kernels that cost nothing until they run (private).

``numba`` takes about 0.3 CPU-seconds to import and another 0.4-0.5 to set up its compiler
the first time a kernel is loaded from the on-disk cache: most of the time of a small job
(``neardup dedup`` of 100 documents, the first ``sign`` of a process).  Two tools keep that
fixed cost away from work that does not need it:

* :func:`njit`: ``numba.njit`` applied on the first *call* of the kernel, not at import.  A
  module of kernels imports without numba; the first call compiles (or loads from the cache)
  the kernel and rebinds every lazy kernel named in that module (and, transitively, in the
  modules of the kernels it calls) to its numba dispatcher, so kernels calling kernels
  compile exactly as if they had been decorated with ``numba.njit`` directly.
* :func:`compiled_worthwhile`: the choice between a compiled kernel and its pure
  numpy/Python reference (every kernel has one and is tested equal to it) for a piece of
  work.  Once numba is loaded, always the kernel.  Before, the reference runs until the
  estimated cost of the work it has done adds up to ``REFERENCE_BUDGET`` (about what loading
  numba costs): a short job never pays for numba, and a long one pays for it at most once
  more than it would have (the ski-rental bound).  A job that knows its size (a batch run,
  from its input files) declares it with :func:`expect_work` and, when it is long, loads the
  kernels at once.  The choice never changes a result, only its cost.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast, overload

__all__ = [
    "REFERENCE_BUDGET",
    "compiled_entry",
    "compiled_worthwhile",
    "expect_work",
    "forced",
    "njit",
    "uncompiled",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Estimated nanoseconds of work run on the reference paths before the compiled kernels are
#: loaded anyway: half a CPU-second, about what importing numba and loading its cache costs.
REFERENCE_BUDGET = 500_000_000

_lock = threading.Lock()
_spent = 0
_forced: bool | None = None


def numba_loaded() -> bool:
    """Whether numba is already imported in this process (its fixed cost is paid)."""
    return "numba" in sys.modules


def compiled_worthwhile(cost_ns: int) -> bool:
    """``True``: run the compiled kernel; ``False``: run the reference, whose cost for this
    piece of work the caller estimates at ``cost_ns`` nanoseconds (counted against
    :data:`REFERENCE_BUDGET`)."""
    global _spent
    if _forced is not None:
        return _forced
    if numba_loaded():
        return True
    with _lock:
        if _spent + cost_ns > REFERENCE_BUDGET:
            return True
        _spent += cost_ns
    return False


def expect_work(cost_ns: int) -> None:
    """Declare work this process is about to do, estimated as :func:`compiled_worthwhile`'s
    ``cost_ns`` (a batch job knows the size of its input).  When it alone exceeds
    :data:`REFERENCE_BUDGET`, the compiled kernels are chosen from now on: the ski-rental
    choice with the length of the job known is to buy at once, not after renting for the
    budget (which a long job would pay on top of loading numba).  Smaller work changes
    nothing."""
    global _spent
    if cost_ns > REFERENCE_BUDGET:
        with _lock:
            _spent = max(_spent, REFERENCE_BUDGET)


def uncompiled(kernel: F) -> F:
    """The plain Python function of a kernel made by :func:`njit`, loaded or not (the same
    code, run by the interpreter: the reference of a small piece of work)."""
    return cast(F, cast(Any, kernel).py_func)


@contextlib.contextmanager
def forced(compiled: bool) -> Iterator[None]:
    """Within the block, :func:`compiled_worthwhile` answers ``compiled`` (tests of both
    paths)."""
    global _forced
    previous, _forced = _forced, compiled
    try:
        yield
    finally:
        _forced = previous


class LazyKernel:
    """A Python function to be compiled by ``numba.njit(**options)`` on first call."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.options = options
        self._dispatcher: Any = None

    @property
    def py_func(self) -> Callable[..., Any]:
        """The plain Python function (as numba's dispatchers name it)."""
        return self.__wrapped__

    def dispatcher(self) -> Any:
        """The numba dispatcher of this kernel (created, and its module bound, once)."""
        if self._dispatcher is None:
            with _bind_lock:
                if self._dispatcher is None:
                    import numba

                    self._dispatcher = numba.njit(**self.options)(self.__wrapped__)
                    _bind(self.__wrapped__.__globals__)
        return self._dispatcher

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher()(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"<lazy kernel {self.__qualname__}>"


_bind_lock = threading.RLock()


def _bind(namespace: dict[str, Any]) -> None:
    """Replace every lazy kernel in a module namespace by its dispatcher (numba resolves a
    kernel's callees through its module globals when it compiles)."""
    for name, value in list(namespace.items()):
        if isinstance(value, LazyKernel):
            namespace[name] = value.dispatcher()


@overload
def njit(fn: F, /) -> F: ...


@overload
def njit(**options: Any) -> Callable[[F], F]: ...


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` deferred to the first call: ``@njit`` or ``@njit(cache=True, ...)``.

    Typed as returning the function itself, so callers are checked against its signature."""
    if args and callable(args[0]) and not options:
        return cast(Any, LazyKernel(args[0], {}))

    def decorate(fn: F) -> F:
        return cast(F, LazyKernel(fn, options))

    return decorate


def compiled_entry(kernel: Any, *args: Any) -> Any:
    """The compiled function of the numba kernel ``kernel`` for the types of ``args``,
    callable from Python like the kernel, or the kernel itself if numba offers none.

    A kernel call goes through numba's dispatcher, which works out the type of every argument
    to pick the compiled code: about half a microsecond for eight arguments, as long as the
    whole query of a new document.  An index's arrays keep their types for its life, so the
    single-call paths pick the code once.  The caller must only ever pass arguments of the
    same types (C-contiguous arrays of the same dtypes and dimensions, integers): the
    compiled code does not check them."""
    try:
        from numba import typeof

        dispatcher = kernel.dispatcher() if hasattr(kernel, "dispatcher") else kernel
        signature = tuple(typeof(a) for a in args)  # type: ignore[no-untyped-call]
        dispatcher.compile(signature)
        return dispatcher.overloads[signature].entry_point
    except (AttributeError, KeyError, TypeError):  # another numba: the dispatcher works
        return kernel
