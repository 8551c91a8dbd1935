"""The demo: script a few functions, print each graph, run them next to eager Python."""
from __future__ import annotations

import math

import numpy as np

import tsjit


def gelu(x: tsjit.Tensor) -> tsjit.Tensor:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def collatz_steps(n: int) -> int:
    total = 0
    for k in range(1, n + 1):
        m = k
        while m != 1:
            m = m // 2 if m % 2 == 0 else 3 * m + 1
            total += 1
    return total


def first_index(xs: list[int], target: int) -> int:
    for i, v in enumerate(xs):
        if v == target:
            return i
    return -1


def circle_area(r: float) -> float:
    return math.pi * r ** 2


def run_demo() -> None:
    examples = [
        (gelu, (np.linspace(-3, 3, 7, dtype=np.float32),)),
        (collatz_steps, (1000,)),
        (first_index, ([4, 8, 15, 16, 23, 42], 16)),
        (circle_area, (2.0,)),
    ]
    for fn, args in examples:
        scripted = tsjit.script(fn)
        print(f"=== {scripted.schema}")
        print(scripted.graph)
        for _ in range(3):           # profiling call, then optimized calls
            result = scripted(*args)
        print(f"tsjit : {result!r}")
        print(f"eager : {fn(*args)!r}")
        print(f"stats : {scripted.stats()}\n")
