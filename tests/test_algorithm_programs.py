"""Algorithm programs of the kind users port to TorchScript or Numba (sorting, dynamic
programming, graphs, stencils), each run eagerly and scripted and compared by the
contract's rule; plus regression tests for the bugs such programs found."""
from __future__ import annotations

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
