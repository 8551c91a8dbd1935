"""Algorithm programs of the kind users port to TorchScript or Numba (sorting, dynamic
programming, graphs, stencils), each run eagerly and scripted and compared by the
contract's rule; plus regression tests for the bugs such programs found."""
from __future__ import annotations

import numpy as np
from _differential import check

REPEAT = 3      # enough calls that the optimized (native) code runs too


def repeated(*calls: tuple) -> tuple:
    return tuple(args for args in calls for _ in range(REPEAT))


def dijkstra(n: int, edges: list[tuple[int, int, float]], src: int) -> list[float]:
    adj: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for u, v, w in edges:
        adj[u].append((v, w))
        adj[v].append((u, w))
    dist = [float("inf")] * n
    dist[src] = 0.0
    pq: list[tuple[float, int]] = [(0.0, src)]
    while len(pq) > 0:
        best = 0
        for i in range(1, len(pq)):
            if pq[i] < pq[best]:
                best = i
        d, u = pq.pop(best)
        if d > dist[u]:
            continue
        for v, w in adj[u]:
            if d + w < dist[v]:
                dist[v] = d + w
                pq.append((d + w, v))
    return dist


def test_annotated_comprehension_of_empty_lists_takes_the_element_type():
    # the annotation typed only the outer list: each `[]` was a list[Tensor]
    edges = [(0, 1, 4.0), (0, 2, 1.0), (2, 1, 2.0), (1, 3, 1.0)]
    check(dijkstra, *repeated((5, edges, 0), (1, [], 0)))


def empty_containers_by_comprehension(n: int) -> tuple[dict[str, list[int]],
                                                       list[int | None]]:
    d: dict[str, list[int]] = {str(i): [] for i in range(n)}
    d["0"].append(n)
    o: list[int | None] = [None if i % 2 else i for i in range(n)]
    return d, o


def test_annotated_dict_comprehension_types_keys_and_values():
    check(empty_containers_by_comprehension, *repeated((3,), (0,)))


def life_step(board: np.ndarray) -> np.ndarray:
    h, w = board.shape[0], board.shape[1]
    out = np.zeros_like(board)
    for i in range(h):
        for j in range(w):
            c = 0
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    if di != 0 or dj != 0:
                        c += board[(i + di) % h, (j + dj) % w]
            if c == 3 or (board[i, j] == 1 and c == 2):
                out[i, j] = 1
    return out


def test_loop_carried_int_that_becomes_a_numpy_value_on_one_branch_widens():
    # `c += board[...]` inside an if made c Tensor on one branch and int on the other
    glider = np.zeros((5, 5), dtype=np.int8)
    glider[1, 2] = glider[2, 3] = 1
    glider[3, 1:4] = 1
    check(life_step, *repeated((glider,), (np.ones((2, 3), dtype=np.int64),)))


def sum_flagged(x: np.ndarray, flags: list[bool]):
    total = 0
    for i in range(x.shape[0]):
        if flags[i]:
            total += x[i]
    return total


def test_branch_widened_variable_keeps_python_type_when_no_branch_ran():
    check(sum_flagged, *repeated((np.arange(3, dtype=np.int8), [False, True, True]),
                                 (np.arange(3.0), [False, False, False]),
                                 (np.zeros(0, dtype=np.float32), [])))
