"""Print the argparse table of one unpacked sglang wheel as JSON (run by build.py, not by hand).

Usage: python -I -S dump_parser.py SITE_DIR [DEPS_DIR]

SITE_DIR holds the wheel's ``sglang/`` package. The parser is built exactly as sglang's
``prepare_server_args`` builds it (a plain ``argparse.ArgumentParser`` filled by
``ServerArgs.add_cli_args``), but without sglang's dependencies installed: every module that is not
sglang's own and not in the standard library (torch, triton, transformers, …) is replaced by an inert
stub, so importing ``sglang.srt.server_args`` runs sglang's real code for everything the parser is made
of. Flags, their order, nargs, dests, choices and the action classes (``Deprecated…Action`` and its
``new_flag``) come from that real code; a choices list computed from a stubbed library would not be a
list and is left out.

Only the standard library is used, so the result does not depend on what the machine has installed.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import sys
import types
from typing import Any

_VERSIONS = {"torch": "2.11.0", "triton": "3.5.0", "transformers": "4.57.0", "flashinfer": "0.5.0"}


class _StubMeta(type):
    """Classes that answer every attribute, call and operator with another stub: enough for module-level
    code of the stubbed libraries (decorators, subclassing ``torch.nn.Module``, ``torch.cuda.…()``)."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kwargs: Any) -> Any:
        return super().__new__(mcs, name, bases, ns)

    def __init__(cls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(name, bases, ns)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]  # used as a decorator: keep the function
        return type.__call__(cls)

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__

    def __iter__(cls) -> Any:
        return iter(())

    def __bool__(cls) -> bool:
        return False

    def __len__(cls) -> int:
        return 0


def _stub_class(name: str) -> Any:
    return _StubMeta(name, (_StubBase,), {})


class _StubBase(str):
    """Instances are strings ("stub") so that ``getattr(torch, device)`` and f-strings work; every
    attribute, call, item and operator gives another stub."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return str.__new__(cls, "stub")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        pass

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]
        return _stub_class("result")()

    def __getitem__(self, item: Any) -> Any:
        return _stub_class("item")()

    def __iter__(self) -> Any:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0

    def __int__(self) -> int:
        return 0

    def __index__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __or__(self, other: Any) -> Any:
        return self

    __ror__ = __and__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __or__
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __rmod__ = __pow__ = __or__

    def __neg__(self) -> Any:
        return self


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub_class(name)
        setattr(self, name, value)
        return value


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = _StubModule(spec.name)
        mod.__path__ = []  # a package: its submodules are stubs too
        top = spec.name.split(".")[0]
        if top in _VERSIONS and "." not in spec.name:
            mod.__version__ = _VERSIONS[top]  # type: ignore[attr-defined]
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        pass


#: Accelerator stacks a CUDA host does not have: importing them fails, as it would there, so sglang's
#: platform probes take the CUDA path (a stub would make ``import torch_npu`` succeed).
ABSENT = frozenset(
    {"torch_npu", "habana_frameworks", "intel_extension_for_pytorch", "torch_musa", "mlx", "torch_xla"}
)


class _StubFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: whatever the real finders cannot find (and is not sglang) is a stub."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        top = fullname.split(".")[0]
        if top == "sglang":
            return None
        if top in ABSENT:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


class _Forgiving(importlib.abc.Loader):
    """sglang's own modules run for real; one whose module-level code fails without its dependencies
    (a platform probe, an assert on torch's version) keeps what it defined and answers the rest with
    stubs. ``sglang.srt.server_args`` and the argument helpers must run cleanly: their failure is fatal."""

    STRICT = ("sglang.srt.server_args", "sglang.srt.arg_groups")

    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            self.real.exec_module(module)
        except Exception as exc:
            if module.__name__.startswith(self.STRICT):
                raise
            print(
                f"stubbed after failure: {module.__name__}: {type(exc).__name__}: {exc}"[:300],
                file=sys.stderr,
            )
            module.__class__ = _StubModule


class _SglangFinder(importlib.abc.MetaPathFinder):
    def __init__(self, site: str) -> None:
        self.site = site

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] != "sglang":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path or [self.site])
        if spec is not None and spec.loader is None and spec.submodule_search_locations:
            return spec  # a namespace package (no __init__.py): the import system handles it
        if spec is None or spec.loader is None:
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        spec.loader = _Forgiving(spec.loader)
        return spec


def _choices(action: argparse.Action) -> list[str] | None:
    c = action.choices
    if isinstance(c, (set, frozenset)):
        c = sorted(c, key=str)
    if isinstance(c, dict):
        c = list(c)
    if isinstance(c, (list, tuple, range)) and 0 < len(c) <= 2000:
        if all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in c):
            return [str(x) for x in c]
    return None


def main() -> None:
    site = sys.argv[1]
    if len(sys.argv) > 2:
        sys.path.insert(0, sys.argv[2])  # the few real dependencies the parser's own code needs (msgspec)
    sys.path.insert(0, site)
    sys.meta_path.insert(0, _SglangFinder(site))
    sys.meta_path.append(_StubFinder())
    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    out = []
    seen: set[int] = set()
    primary: dict[int, str] = {}
    for opt, action in parser._option_string_actions.items():
        if id(action) not in primary:
            primary[id(action)] = opt
    by_dest: dict[str, str] = {}
    for opt, action in parser._option_string_actions.items():
        first = id(action) not in seen
        seen.add(id(action))
        entry: dict[str, Any] = {"flag": opt, "dest": action.dest, "action": type(action).__name__}
        entry["nargs"] = (
            action.nargs if isinstance(action.nargs, (int, str)) or action.nargs is None else None
        )
        if first:
            ch = _choices(action)
            if ch:
                entry["choices"] = ch
        entry["primary"] = primary[id(action)]
        # another action writing the same dest (an alias registered as its own argument)
        entry["dest_primary"] = by_dest.setdefault(action.dest, primary[id(action)])
        new_flag = getattr(action, "new_flag", None)
        if isinstance(new_flag, str):
            entry["new_flag"] = new_flag
        helptext = action.help if isinstance(action.help, str) else ""
        entry["help"] = " ".join(helptext.split())[:300]
        out.append(entry)
    print(json.dumps({"allow_abbrev": bool(parser.allow_abbrev), "options": out}))


if __name__ == "__main__":
    main()
