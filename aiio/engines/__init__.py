"""The storage engines, one module each; the registry below is the one list of them. Adding
an engine is one module and one line here (docs/ARCHITECTURE.md, "Adding an engine").

Each module exposes `make(target, method) -> Engine` (aiio.engines.base.Engine). A name
`external:some.module` loads an engine module from outside the package, as fio's
`ioengine=external:` loads an engine from a shared object.
"""

from __future__ import annotations

import importlib
import pickle
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE, METHOD_NULL
from aiio.engines.base import DURABLE_NEVER
from aiio.errors import ConfigError

if TYPE_CHECKING:
    from aiio.engines.base import Capabilities, Engine

# engine name -> the module that makes it
REGISTRY = {
    "posix": "aiio.engines.posix",        # psync: pread/pwrite, fsync
    "io_uring": "aiio.engines.io_uring",  # reads at a queue depth through one ring
    "null": "aiio.engines.null",          # no read or write system call: aiio's own cost
    "s3": "aiio.engines.s3",              # objects through boto3
}
EXTERNAL = "external:"
DEFEATING_METHODS = (METHOD_DIRECT, METHOD_FADVISE)  # the methods that say reads got past the cache
OBJECT_SCHEME = "s3://"


def choose(target: str, method: str, asked: str | None = None) -> str:
    """The engine a run uses: the one asked for, else the target's (a bucket's for s3://,
    the null engine for the null method, psync for a directory). The one place the kind of
    target picks an engine; a registered engine of the other kind is refused in one line."""
    on_bucket = str(target).lower().startswith(OBJECT_SCHEME)
    if not asked:
        return "s3" if on_bucket else "null" if method == METHOD_NULL else "posix"
    module_of(asked)  # an unknown name is refused before the kinds are compared
    if asked in REGISTRY and (asked == "s3") != on_bucket:
        kind = "an s3:// target" if asked == "s3" else "a directory target"
        raise ConfigError(f"engine {asked} needs {kind}; {target} is not one")
    if asked == "null" and method != METHOD_NULL:
        raise ConfigError("the null engine is the null method: use --cache null")
    if method == METHOD_NULL and not on_bucket and asked in REGISTRY \
            and asked not in ("null", "posix"):
        # posix without its system calls is the null engine (make); any other registered
        # engine would be named in the result for calls it never made
        raise ConfigError(f"the null method is the null engine: leave out --engine {asked}")
    return asked


def asked_of(res: Any) -> str | None:
    """The engine a saved run asked for (`--engine`), or None when it ran on the engine its
    target and method pick anyway (and for a result saved before engines were recorded)."""
    engine, method = res.get("engine"), res.get("method")
    target = res.get("target")
    path = target.get("path") if isinstance(target, Mapping) else None
    if not isinstance(engine, str) or not isinstance(path, str) or not isinstance(method, str):
        return None
    return None if engine == choose(path, method) else engine


def capabilities(name: str) -> Capabilities | None:
    """What engine `name` can do, before any target is opened (a run's memory check asks):
    its module's `CAPS`; None when the module names none."""
    return getattr(module_of(name), "CAPS", None)


def module_of(name: str) -> Any:
    """The module of a registered engine, or of `external:some.module`; unknown names and
    modules that do not load are a one-line error."""
    if name.startswith(EXTERNAL):
        return _external(name, name[len(EXTERNAL):])
    if name not in REGISTRY:
        raise ConfigError(f"unknown engine {name!r}; choose one of: {', '.join(REGISTRY)} "
                          f"or {EXTERNAL}MODULE")
    return importlib.import_module(REGISTRY[name])


def _external(name: str, path: str) -> Any:
    """An engine module from outside the package. Anything its import raises is a one-line
    error: it is someone else's code, and its traceback is not aiio's to show."""
    if not path or path.startswith("."):
        raise ConfigError(f"engine {name} names no module: give one importable by its full "
                          f"name, {EXTERNAL}package.module")
    try:
        module = importlib.import_module(path)
    except ImportError as exc:
        raise ConfigError(f"engine {name}: cannot import {path} ({exc}); an engine "
                          "module must be importable on every host, e.g. on "
                          "PYTHONPATH") from None
    except Exception as exc:  # noqa: BLE001 - a third party's module failing as it loads
        raise ConfigError(f"engine {name}: cannot import {path} ({_one_line(exc)})") from None
    if not callable(getattr(module, "make", None)):
        raise ConfigError(f"engine {name}: {path} has no make(target, method)")
    return module


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def make(name: str, target: Any, method: str) -> Engine:
    """The engine `name` for an opened target, reading by `method`; psync without its
    system calls (the null method) is the null engine, never a posix one that writes nothing."""
    if name == "posix" and method == METHOD_NULL:
        name = "null"
    module = module_of(name)
    if not name.startswith(EXTERNAL):
        return module.make(target, method)
    return _external_engine(name, module, target, method)


def _external_engine(name: str, module: Any, target: Any, method: str) -> Engine:
    """An engine of one's own, made and held to the contract before any file is written:
    what it gets wrong is said in one line here rather than in a client or on another host."""
    made = f"{name[len(EXTERNAL):]}.make(target, method)"
    try:
        engine = module.make(target, method)
    except Exception as exc:  # noqa: BLE001 - a third party's engine refusing to be made
        raise ConfigError(f"engine {name}: {made} failed: {_one_line(exc)}") from None
    if missing := _lacks(engine):
        what = type(engine).__name__ if engine is not None else None
        lacks = "" if engine is None else f": it lacks {', '.join(missing)}"
        raise ConfigError(f"engine {name}: {made} gave {what}, not an engine "
                          f"(aiio.engines.base.Engine){lacks}")
    _require_identity(name, engine)
    _require_kind(name, engine, str(getattr(target, "path", "")))
    if engine.caps.durable == DURABLE_NEVER and method != METHOD_NULL:
        # what `choose` holds the registered null engine to: a run of no I/O is never
        # recorded as a measurement of the storage
        raise ConfigError(f"engine {name} makes no read or write call: it runs with "
                          "--cache null only")
    if engine.method != method:  # the result records the run's method, not the engine's
        raise ConfigError(f"engine {name} reads by method {engine.method}, not the run's "
                          f"{method}: make(target, method) makes an engine of that method")
    if method in DEFEATING_METHODS and not engine.caps.cache_defeat:
        # the result and report would say the reads got past the cache (`choose` keeps the
        # registered engines to the methods they can)
        raise ConfigError(f"engine {name} cannot get past the client's page cache "
                          f"(caps.cache_defeat), so its reads are no {method} reads: run it "
                          "with --cache none")
    try:  # what MPI does to it on the way to every other host, tried on this one
        pickle.dumps(engine)
    except Exception as exc:  # noqa: BLE001 - whatever a third party's engine holds
        raise ConfigError(f"engine {name}: {made} gave an engine that cannot be pickled "
                          f"({_one_line(exc)}): an engine is configuration only and makes "
                          "what a process needs (a connection, a lock) in that process") \
            from None
    return engine


def _require_identity(name: str, engine: Engine) -> None:
    """An engine of one's own is recorded by its own name, one word no registered engine has
    (a result names the engine its runs are filed under in the history and compare), with
    capabilities of the contract's type (every phase asks them)."""
    from aiio.engines.base import Capabilities
    own = engine.name
    if not isinstance(own, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", own):
        raise ConfigError(f"engine {name} calls itself {own!r}: its name must be one word "
                          "(letters, digits, _ . -)")
    if own in REGISTRY and REGISTRY[own] != name[len(EXTERNAL):]:
        raise ConfigError(f"engine {name} calls itself {own}, the name of a registered "
                          "engine: give it a name of its own")
    if not isinstance(engine.caps, Capabilities):
        raise ConfigError(f"engine {name}: its caps is a {type(engine.caps).__name__}, not "
                          "a Capabilities (aiio.engines.base)")


def _require_kind(name: str, engine: Engine, where: str) -> None:
    """An engine of one's own serves the kind of target its capabilities say (files in
    folders, or a bucket's objects), as `choose` holds the registered ones to theirs: a file
    engine on a bucket would fail in its clients, or be passed over by a phase that reads
    the bucket itself while the result named it."""
    on_bucket = where.lower().startswith(OBJECT_SCHEME)
    if engine.caps.folders and on_bucket:
        raise ConfigError(f"engine {name} works on files in folders; {where} is a bucket")
    if not engine.caps.folders and not on_bucket:
        raise ConfigError(f"engine {name} works on a bucket's objects; {where} is a directory")


def _lacks(engine: Any) -> list[str]:
    """The members of the Engine contract an object lacks, so a newcomer's engine is told
    what to add before a client process meets the first one missing."""
    from aiio.engines.base import Engine as Contract
    members = set(Contract.__annotations__) | {
        n for n, v in vars(Contract).items() if callable(v) and not n.startswith("_")}
    return sorted(n for n in members if not hasattr(engine, n))
