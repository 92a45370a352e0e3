"""The engine's one place for numba: compile options, the cache location, and array normalization for kernels.

Kernels are ``@kernel`` functions (``numba.njit`` with ``cache=True``), compiled on first use and loaded from the
on-disk cache afterwards. The cache goes where numba puts it (``__pycache__`` beside the source, else numba's
user-wide cache directory); when neither is writable (a read-only install under a read-only home), this module
sets ``NUMBA_CACHE_DIR`` to a per-user temporary directory before numba is imported, so a kernel never fails
to cache. ``NUMBA_CACHE_DIR`` set by the user always wins.

A kernel can call another through its compiled code's address (`address_call`) instead of by name: numba links
the IR of every callee called by name into the caller and optimizes the whole module again, so a kernel that calls
all the potential kernels re-optimized all of them (docs/engine.md, "Solver paths").

Kernel arguments go through `kernel_array`: float64 (or the given dtype), C-contiguous and writable. numba
compiles one specialization per array layout and per read-only flag, so a read-only or strided input would
trigger a fresh multi-second compile mid-run (measured: 10 s in the issue-12 prototype).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "numba"


def _choose_cache_dir() -> str | None:
    """The NUMBA_CACHE_DIR to set, or None when numba's own locations work (or the user chose one)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    here = Path(__file__).resolve().parent
    if _writable_dir(here / "kernels" / "__pycache__") or _writable_dir(_user_cache_dir()):
        return None
    return str(Path(tempfile.gettempdir()) / f"superdex_gym-numba-{os.getuid() if hasattr(os, 'getuid') else 0}")


_fallback = _choose_cache_dir()
if _fallback is not None:
    os.environ["NUMBA_CACHE_DIR"] = _fallback
    if "numba" in sys.modules:  # imported before us: make its config see the directory
        from numba.core import config as _numba_config

        _numba_config.reload_config()

import numba  # noqa: E402  (after the cache directory is settled)
from llvmlite import ir  # noqa: E402
from numba.core import errors, types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

# fastmath off: kernels must reproduce the numpy oracles to round-off and be deterministic across runs.
_OPTIONS = dict(cache=True, nogil=True, fastmath=False, boundscheck=False, error_model="numpy")


def kernel(fn=None, **options):
    """``numba.njit`` with the engine's options (``cache=True``, no fastmath, numpy error model)."""
    opts = {**_OPTIONS, **options}
    if fn is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(fn)


def inner_kernel(fn=None, **options):
    """A `kernel` called only from other kernels, never from Python: compiled without the CPython and C-callable
    wrappers numba otherwise builds, optimizes and caches beside every kernel."""
    return kernel(fn, no_cpython_wrapper=True, no_cfunc_wrapper=True, **options)


def kernel_array(value, dtype=np.float64) -> np.ndarray:
    """``value`` as a C-contiguous, writable array of ``dtype`` (a copy only when it is not one already)."""
    if type(value) is np.ndarray and value.dtype == dtype:  # the usual case, without np.require's ~7 us
        flags = value.flags
        if flags.c_contiguous and flags.writeable and flags.aligned:
            return value
    return np.require(value, dtype=dtype, requirements=("C", "W", "A"))


def wrapper_address(dispatcher, signature) -> int:
    """The address of ``dispatcher``'s C-callable wrapper for ``signature`` (a numba Signature), compiling it (or
    loading it from the cache) first. Valid for the life of the process."""
    args = tuple(signature.args)
    if args not in dispatcher.overloads:
        # By the argument types alone, as a call from Python compiles it: numba keys its on-disk cache by what
        # compile() is given, and a full signature (with the return type) would be a second entry, compiled again.
        dispatcher.compile(args)
    result = dispatcher.get_compile_result(signature)  # checks the declared return type against the compiled one
    return result.library.get_pointer_to_function(result.fndesc.llvm_cfunc_wrapper_name)


def address_call(dispatcher, signature):
    """An intrinsic ``call(address, *args)`` for kernels: calls the code at ``address`` (an int64, from
    `wrapper_address(dispatcher, signature)`) with ``args``.

    The callee stays out of the caller's LLVM module: the caller compiles and caches without it, and the callee is
    compiled once, by its own dispatcher. ``args`` must have exactly the types of ``signature`` (checked when the
    caller compiles: a mismatch would call the wrong machine code). The callee runs without raising: the
    kernels' numpy error model and unchecked bounds leave it nothing to raise but a failed allocation, which its
    wrapper reports as unraisable."""
    declared = tuple(signature.args)
    name = getattr(dispatcher, "__name__", str(dispatcher))

    def typer(typingctx, address, *args):
        if len(args) == 1 and isinstance(args[0], types.StarArgTuple):
            args = tuple(args[0].types)
        if not isinstance(address, types.Integer) or tuple(args) != declared:
            raise errors.TypingError(f"{name} called by address with ({address}; {', '.join(map(str, args))}), "
                                     f"declared (int64; {', '.join(map(str, declared))})")

        def codegen(context, builder, sig, llargs):
            packed = llargs[1]
            values = [builder.extract_value(packed, i) for i in range(len(declared))]
            fnty = ir.FunctionType(context.get_value_type(signature.return_type),
                                   [context.get_value_type(t) for t in declared])
            return builder.call(builder.inttoptr(llargs[0], fnty.as_pointer()), values)

        return signature.return_type(address, types.StarArgTuple.from_types(tuple(args))), codegen

    typer.__name__ = f"call_{name}"
    return intrinsic(typer)


def in_disk_cache(dispatcher, args) -> bool | None:
    """Whether numba's on-disk cache holds ``dispatcher``'s code for the argument types ``args`` (read from the
    index, nothing compiled or loaded); None when the kernel has no on-disk cache (caching off)."""
    from numba.core.caching import FunctionCache

    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, FunctionCache) or not cache._enabled:
        return None
    key = cache._index_key(tuple(args), dispatcher.targetctx.codegen())
    with cache._guard_against_spurious_io_errors():
        return key in cache._cache_file._load_index()
    return False  # an unreadable index: numba compiles, as it would


def compile_in_processes(code_lines: list[str]) -> list[subprocess.Popen]:
    """Run each Python statement of ``code_lines`` in its own child process (this interpreter, this
    environment, so the same numba cache directory) and return the processes. Used on a cold cache to compile
    independent kernels into the on-disk cache in parallel while this process compiles others; this process then
    loads them from the cache (the same machine code), and compiles whatever a child failed to."""
    if not sys.executable:  # an embedded interpreter: nothing to start, this process compiles everything
        return []
    children = []
    for code in code_lines:
        try:
            children.append(subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ),
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL))
        except OSError:  # no process to spare: this process compiles what the child would have
            break
    return children
