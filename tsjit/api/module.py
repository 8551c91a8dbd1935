"""`tsjit.Module` and its containers: the nn.Module story with NumPy arrays.

Subclass `Module`, set arrays, numbers, containers and submodules as
attributes in `__init__`, define `forward`; `tsjit.script(instance)` compiles
`forward` and the `@tsjit.export`ed methods for that instance.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator


class Module:
    def __init__(self) -> None:
        pass

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


class ModuleList(Module):
    """A list of submodules; script code indexes it by constants and unrolls loops over it."""

    def __init__(self, modules: Iterable[Module] = ()):
        super().__init__()
        self._modules = list(modules)

    def __getitem__(self, index: int) -> Module:
        return self._modules[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules)

    def append(self, module: Module) -> ModuleList:
        self._modules.append(module)
        return self


class ModuleDict(Module):
    """Submodules by name, in insertion order."""

    def __init__(self, modules: dict[str, Module] | None = None):
        super().__init__()
        self._modules = dict(modules or {})

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def items(self):
        return self._modules.items()

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()
