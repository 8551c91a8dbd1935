"""Fusion: maximal groups of elementwise array ops become `prim::FusionGroup` nodes.

Each block is scanned in program order.  An elementwise node joins the groups that
produce its operands (merging them when it connects several, as `cy = f * cx + i * g`
joins the forget and input gates of an LSTM cell), or else a group reading the same
arrays (`np.exp(x), np.tanh(x)` then read x once), provided the group still makes one
kernel (`elementwise_kernel.build_group`) and its members may all move down to the
node's position.  A group runs where its last member was; a member may move past a node
only if that changes nothing observable:
  - the node does not use the member's result;
  - the node has no effects (writes, prints, calls of unknown code), since members read
    arrays such a node could change;
  - the first exception stays the first: a member may raise only ValueError (it combines
    two arrays whose shapes may not broadcast, or writes in place), so it may not pass a
    node that may raise anything else;
  - a member writing in place only passes nodes that neither read mutable values nor
    raise;
  - a member that may report a floating-point error (a RuntimeWarning, or what
    `np.errstate` asks for instead) does not pass a node that may report one outside a
    kernel, nor one that may raise other than ValueError: eager code reports in program
    order, the warning before the other's exception (np.log(x) then x & x of a float x
    warns, then raises TypeError; under np.errstate(all="raise") the FloatingPointError
    is the one raised). (It does pass an op whose only exception is ValueError of shapes
    that do not broadcast, as a kernel's own members do: where both happen, the
    ValueError comes without the report.) It may pass a member of another group that may
    report only if that group runs after its own (`_keeping_order`): a kernel reports its
    members' errors together where it runs, so of two groups whose members interleave,
    np.exp(x), y * y, then the multiply's kernel, then the exp's, the exp's overflow
    would come after the multiply's underflow.
Groups of one op are left alone (a kernel launch would not beat NumPy's own loop).  A
result that nothing uses is one of the group's outputs all the same: dead-code elimination
kept its node because it may warn or raise (a floating-point error is an effect), and a
kernel computes only the values its outputs need.

A FusionGroup takes the values its members read from outside (constants are copied into
it) and gives the values read after it; its `subgraph` holds copies of the members with
their input types as the kernel assumes them, which `insert_guards` checks at run time.
"""
from __future__ import annotations

import logging

from ..ir.graph import Block, Graph, Node, Value, clone_node, constant_value
from ..ir.types import IntType, NoneType, TensorType
from ..ops import OPS
from .analysis import has_effects, reads_mutable, reports_errors
from .elementwise_kernel import (
    FusedKernel,
    GroupError,
    build_group,
    extend_group,
    is_constant_like,
    read_call,
)

MIN_GROUP_SIZE = 2
# Ops per kernel at most.  Each join is checked on the whole group, so unbounded groups
# made fusion quadratic in the length of straight-line code (a 150-statement function
# spent a minute here); and LLVM's time grows faster than linearly in a kernel's size.
# 64 keeps Black-Scholes (63 ops) one kernel: split at 48, its intermediates cost ~10% of
# a call and its two kernels compiled longer than the one.
MAX_GROUP_SIZE = 64
_NONE: frozenset = frozenset()
_SHAPE_ERRORS = frozenset({ValueError})
_ANY = None

log = logging.getLogger("tsjit.fuser")


def fuse_elementwise(graph: Graph) -> None:
    """Replace groups of elementwise ops by prim::FusionGroup nodes, block by block."""
    blocks = [graph.block, *(b for node in graph.nodes() for b in node.blocks)]
    for block in blocks:
        BlockFuser(block).run()


class BlockFuser:
    """Groups the candidate nodes of one block (see the module docstring); a subclass
    changes what a candidate is, what makes a group (`build`) and which groups become
    FusionGroups (`wanted`)."""

    def __init__(self, block: Block):
        self.block = block
        self.nodes = list(block.nodes)
        self.position = {node: i for i, node in enumerate(self.nodes)}
        self.users = {node: self._users(node) for node in self.nodes}
        self.exceptions: dict[Node, frozenset | None] = {}
        self.group_of: dict[Node, list[Node]] = {}   # candidates grouped so far
        # id(group) -> (group, its kernel) for the groups checked last (see `_check`)
        self.kernels: dict[int, tuple[list[Node], FusedKernel]] = {}

    def _users(self, node: Node) -> set[Node]:
        """The nodes of this block (or its return) that use a result of `node`,
        directly or inside their blocks."""
        users = set()
        for v in node.outputs:
            for user, _ in v.uses:
                while user.block is not self.block:
                    user = user.block.owner
                users.add(user)
        return users

    def candidate(self, node: Node) -> bool:
        return read_call(node) is not None

    def build(self, members: list[Node], used_outside) -> FusedKernel:
        return build_group(members, used_outside)

    def extend(self, group: list[Node], kernel: FusedKernel, node: Node,
               used_outside) -> FusedKernel:
        """`build(group + [node])`, given `kernel`, the group's (only `node` is added)."""
        return extend_group(kernel, group, node, used_outside)

    def wanted(self, group: list[Node]) -> bool:
        if len(group) < MIN_GROUP_SIZE:
            log.debug("not fused: %s alone (a kernel for one op does not beat NumPy)",
                      _describe(group[0]))
            return False
        return True

    def run(self) -> None:
        groups: list[list[Node]] = []
        group_of = self.group_of
        for node in self.nodes:
            if not self.candidate(node):
                continue
            joined = self._join(node, groups, group_of)
            if joined is None:
                joined = [node]
                try:
                    self.kernels[id(joined)] = (joined,
                                                self.build(joined, self._outside_of({node})))
                except GroupError as e:
                    log.debug("not fused: %s: %s", _describe(node), e)
                    continue
                groups.append(joined)
            for member in joined:
                group_of[member] = joined
        for group in self._keeping_order([g for g in groups if self.wanted(g)]):
            self._replace(group)

    def _join(self, node: Node, groups: list[list[Node]],
              group_of: dict[Node, list[Node]]) -> list[Node] | None:
        """Add `node` to the groups producing its operands (all of them if possible, else
        the largest that works), or else to the last group reading the same arrays;
        returns the group it joined, or None."""
        producers = []
        for v in node.inputs:
            group = group_of.get(v.node)
            if group is not None and all(group is not g for g in producers):
                producers.append(group)
        if not producers:
            producers = self._siblings(node, groups)
        options = ([producers] if len(producers) > 1 else []) + [
            [g] for g in sorted(producers, key=len, reverse=True)]
        full = [o for o in options if sum(map(len, o)) >= MAX_GROUP_SIZE]
        if full:
            log.debug("not joined: %s to a group of %d: a kernel takes at most %d ops",
                      _describe(node), sum(map(len, full[-1])), MAX_GROUP_SIZE)
            options = [o for o in options if sum(map(len, o)) < MAX_GROUP_SIZE]
        for option in options:
            members = sorted([*(m for g in option for m in g), node], key=self.position.get)
            reason = self._check(members, option[0] if len(option) == 1 else None)
            if reason is None:
                for g in option:
                    groups.remove(g)
                groups.append(members)
                return members
            log.debug("not joined: %s to a group of %d: %s", _describe(node),
                      len(members) - 1, reason)
        return None

    def _siblings(self, node: Node, groups: list[list[Node]]) -> list[list[Node]]:
        """Groups reading every array `node` reads (so both iterate over the same space:
        `np.exp(x), np.tanh(x)` read x once)."""
        arrays = {v for v in node.inputs if isinstance(v.type, TensorType)}
        siblings = []
        for group in groups:
            members = set(group)
            inputs = {v for m in group for v in m.inputs if v.node not in members}
            if arrays and arrays <= inputs:
                siblings.append(group)
        return siblings[-1:]

    def _outside_of(self, members: set[Node]):
        def used_outside(v: Value) -> bool:   # unused: kept for its effects (see above)
            return not v.uses or any(self._top(user) not in members for user, _ in v.uses)
        return used_outside

    def _top(self, user: Node) -> Node:
        while user.block is not self.block:
            user = user.block.owner
        return user

    def _check(self, members: list[Node], grown: list[Node] | None) -> str | None:
        """Why `members` cannot be one group run at the last member's place, or None.
        `grown`: the group `members` adds its last node to (its kernel is extended, and
        only the moves past the nodes since its end are checked again)."""
        member_set = set(members)
        used_outside = self._outside_of(member_set)
        previous = self.kernels.get(id(grown)) if grown is not None else None
        if previous is not None and previous[0] is not grown:
            previous = None
        try:
            if previous is not None:
                fused = self.extend(grown, previous[1], members[-1], used_outside)
            else:
                fused = self.build(members, used_outside)
        except GroupError as e:
            return str(e)
        end = self.position[members[-1]]
        start = self.position[grown[-1]] if previous is not None else 0
        for member in members[:-1]:
            for other in self.nodes[max(self.position[member], start) + 1:end]:
                if other not in member_set:
                    reason = self._blocks_move(member, other, member in fused.raising)
                    if reason is not None:
                        return reason
        self.kernels[id(members)] = (members, fused)
        return None

    def _blocks_move(self, member: Node, other: Node, member_raises: bool) -> str | None:
        """Why `member` cannot move down past `other` (see the module docstring)."""
        if other in self.users[member]:
            return f"{_describe(other)} uses the result of {_describe(member)} before the group"
        if has_effects(other):
            return f"{_describe(member)} would move past the effects of {_describe(other)}"
        raises = self._exceptions(other)
        call = read_call(member)
        writes = call is not None and call.target is not None
        if writes and (raises != _NONE or _reads_mutable(other)):
            return f"the write of {_describe(member)} would move past {_describe(other)}"
        if member_raises and raises != _NONE and raises != _SHAPE_ERRORS:
            return (f"{_describe(member)} and {_describe(other)} may both raise; their "
                    f"order must stay")
        if reports_errors(member) and self._reports_alone(other):
            return (f"{_describe(member)} and {_describe(other)} may both report a "
                    f"floating-point error; their order must stay")
        if reports_errors(member) and raises != _NONE and raises != _SHAPE_ERRORS:
            return (f"{_describe(member)} may report a floating-point error, which eager "
                    f"code reports before {_describe(other)} raises")
        return None

    def _reports_alone(self, node: Node) -> bool:
        """Whether `node` may report a floating-point error and is in no group (yet: a
        group that is not wanted in the end is checked again, `_keeping_order`). The
        errors of a kernel's ops are reported in their program order (re-run in NumPy)."""
        return node not in self.group_of and reports_errors(node)

    def _keeping_order(self, groups: list[list[Node]]) -> list[list[Node]]:
        """`groups` without those whose members would pass a node that may report a
        floating-point error and reports before the group runs: a node that runs alone
        after all (in a group too small to be wanted, or in one dropped here), or a member
        of a group that runs first (see the module docstring). Such a group's ops run as
        NumPy's calls; dropping a group only adds nodes that run alone, so what is broken
        stays broken and the loop ends."""
        kept = groups
        while True:
            runs_at = {m: self.position[g[-1]] for g in kept for m in g}
            broken = [g for g in kept if self._reported_before(g, runs_at)]
            if not broken:
                return kept
            for g in broken:
                log.debug("not fused: a group of %d: a member would pass a node that may "
                          "report a floating-point error before the group runs", len(g))
            kept = [g for g in kept if all(g is not b for b in broken)]

    def _reported_before(self, group: list[Node], runs_at: dict[Node, int]) -> bool:
        """Whether a member of `group` that may report would pass a node that may report
        and runs (`runs_at`: a fused node's group's position; else its own) before
        `group` does."""
        end = self.position[group[-1]]
        return any(reports_errors(other) and runs_at.get(other, self.position[other]) < end
                   for m in group[:-1] if reports_errors(m)
                   for other in self.nodes[self.position[m] + 1:end])

    def _exceptions(self, node: Node) -> frozenset | None:
        """The exception classes `node` may raise (None: any).  A member only raises
        ValueError (shapes that do not broadcast, a read-only output), so it may swap
        places with a node that raises nothing else: whichever raises first, the class
        is the same."""
        if node not in self.exceptions:
            raises = _ANY if _may_raise(node) and not _basic_slicing(node) else _NONE
            if raises is not _NONE and read_call(node) is not None:
                try:
                    fused = build_group([node], lambda v: True)
                    raises = _SHAPE_ERRORS if fused.raising else _NONE
                except GroupError:
                    pass
            self.exceptions[node] = raises
        return self.exceptions[node]

    def _replace(self, members: list[Node]) -> None:
        member_set = set(members)
        try:
            fused = self.build(members, self._outside_of(member_set))
        except GroupError as e:   # the group's last join succeeded, so this is not expected
            log.debug("not fused: group of %d: %s", len(members), e)
            return
        group = Node("prim::FusionGroup", {"subgraph": _subgraph(members, fused)},
                     members[-1].source)
        for v in fused.group_inputs:
            group.add_input(v)
        for out in fused.outputs:
            group.add_output(out.type, out.root.name)
        group.insert_before(members[-1])
        for out, result in zip(fused.outputs, group.outputs):
            for v in out.values:
                v.replace_all_uses_with(result)
        for member in reversed(members):
            member.destroy()
        log.debug("fused %d ops (%s) into a kernel: %d inputs, %d outputs", len(members),
                  ", ".join(m.kind for m in members), len(group.inputs), len(group.outputs))


def _subgraph(members: list[Node], fused: FusedKernel) -> Graph:
    """Copies of `members` over parameters typed as the kernel assumes its inputs."""
    graph = Graph()
    env: dict[Value, Value] = {}
    for v in fused.group_inputs:
        env[v] = graph.add_input(fused.input_types[v], v.name)
    for member in members:
        for v in member.inputs:
            _copy_constant(v, env, graph)
        copy = graph.block.append(clone_node(member, env))
        for original, v in zip(member.outputs, copy.outputs):
            v.type = fused.value_types.get(original, v.type)
    for out in fused.outputs:
        graph.block.add_output(env[out.root])
    return graph


def _copy_constant(v: Value, env: dict[Value, Value], graph: Graph) -> None:
    """Copy the constant (or slice of constants) `v` into the subgraph, once."""
    if v in env:
        return
    assert is_constant_like(v.node), f"group operand {v} is neither an input nor a constant"
    for inner in v.node.inputs:
        _copy_constant(inner, env, graph)
    graph.block.append(clone_node(v.node, env))


def _basic_slicing(node: Node) -> bool:
    """Whether `node` is `x[a:b, c:d]` of a tensor of known rank, no more slices than
    axes, each step a constant other than 0: out-of-range bounds clip, so it cannot raise
    (the LSTM cell's gates[:, h:2 * h] would otherwise keep each gate's exp in a kernel
    of its own)."""
    if node.kind != "aten::__getitem__" or not isinstance(node.inputs[0].type, TensorType):
        return False
    index = node.inputs[1].node
    slices = index.inputs if index.kind == "prim::TupleConstruct" else [index.outputs[0]]
    rank = node.inputs[0].type.rank
    return rank is not None and len(slices) <= rank and all(
        s.node.kind == "prim::Slice" and len(s.node.inputs) == 3
        and all(v.type in (IntType, NoneType) for v in s.node.inputs)
        and _nonzero_step(s.node.inputs[2]) for s in slices)


def _nonzero_step(step: Value) -> bool:
    value = constant_value(step)
    return value is None or (type(value) is int and value != 0)


def _may_raise(node: Node) -> bool:
    op = OPS.get(node.kind)
    return op is None or op.may_raise_on([v.type for v in node.inputs]) or any(
        _may_raise(inner) for block in node.blocks for inner in block.nodes)


def _reads_mutable(node: Node) -> bool:
    return reads_mutable(node) or any(
        _reads_mutable(inner) for block in node.blocks for inner in block.nodes)


def _describe(node: Node) -> str:
    where = f" at {node.source}" if node.source is not None else ""
    return f"{node.kind}{where}"
