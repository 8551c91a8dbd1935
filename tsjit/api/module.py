"""`tsjit.Module` and its containers: the nn.Module story with NumPy arrays.

Subclass `Module`, set arrays, numbers, containers and submodules as
attributes in `__init__`, define `forward`; `tsjit.script(instance)` compiles
`forward` and the `@tsjit.export`ed methods for that instance.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator


class Module:
    """Base class of scriptable modules, as `torch.nn.Module` (arrays instead of tensors).

    Set arrays, numbers, strings, containers and submodules as attributes in `__init__`
    (annotate those whose type the value does not say: `self.seen: List[int] = []`),
    define `forward`, and script an instance: `forward` and the methods marked
    `@tsjit.export` are compiled for that instance, its attributes read from it on every
    call (names in `__constants__` or annotated `tsjit.Final[...]` are compiled in)::

        import numpy as np
        import tsjit

        class Linear(tsjit.Module):
            def __init__(self, w: np.ndarray, b: np.ndarray):
                super().__init__()
                self.w, self.b = w, b

            def forward(self, x: tsjit.Tensor) -> tsjit.Tensor:
                return np.maximum(x @ self.w + self.b, 0.0)

        layer = tsjit.script(Linear(np.ones((3, 2)), np.zeros(2)))
        y = layer(np.ones((4, 3)))          # the compiled forward
        layer.save("linear.tsjit")          # tsjit.load("linear.tsjit") in another process

    `tsjit.ModuleList` and `tsjit.ModuleDict` hold submodules; script code indexes them
    by constants and unrolls loops over them.  `self.training` (a bool attribute, True
    until `eval()`) lets `forward` behave differently in training and in inference."""

    def __init__(self) -> None:
        self.training = True

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def train(self, mode: bool = True) -> Module:
        """Set `training` on this module and every submodule, as nn.Module.train does."""
        for module in self._self_and_submodules():
            module.training = mode
        return self

    def eval(self) -> Module:
        """`train(False)`."""
        return self.train(False)

    def _self_and_submodules(self) -> Iterator[Module]:
        yield self
        for value in vars(self).values():      # ModuleList/ModuleDict keep theirs in one
            held = value.values() if isinstance(value, dict) else \
                value if isinstance(value, list) else (value,)
            for child in held:
                if isinstance(child, Module):
                    yield from child._self_and_submodules()


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
