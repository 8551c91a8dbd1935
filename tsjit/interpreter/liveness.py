"""Which SSA values may share one Python variable: liveness on structured control flow.

Nodes are numbered in program order with their blocks nested in place: a node reads its
inputs at `use_pos` and writes its outputs at `def_pos`, after its blocks.  A loop reads its
carried initial values at `use_pos`, writes its body parameters at `entry_pos` (the entry
assignment) and then reads its trip count and condition.  A value is live at a point when
some use can still run after it: a later use on the same path, or any use inside a loop
that encloses the point but not the definition (the next iteration reaches it).  The two
branches of an If exclude each other.  Two values may share a variable exactly when
neither is live where the other is written.
"""
from __future__ import annotations

from ..ir.graph import Block, Graph, Node, Value


def _ancestors(block: Block) -> list[Block]:
    """block, the block containing its owner, and so on up to the graph's block."""
    chain = [block]
    while chain[-1].owner is not None:
        chain.append(chain[-1].owner.block)
    return chain


class Liveness:
    def __init__(self, graph: Graph):
        self.use_pos: dict[Node, int] = {}
        self.def_pos: dict[Node, int] = {}
        self.block_start: dict[Block, int] = {}
        self.block_end: dict[Block, int] = {}
        self._entry_pos: dict[Node, int] = {}
        self._next = 0
        self._number(graph.block)
        # where each value is written (position, block of that point) and where it is visible
        self.defined: dict[Value, int] = {}
        self._def_block: dict[Value, Block] = {}
        self._scope: dict[Value, Block] = {}
        self._add_values(graph.block, self.block_start[graph.block], graph.block)

    def _tick(self) -> int:
        self._next += 1
        return self._next

    def _number(self, block: Block) -> None:
        self.block_start[block] = self._tick()
        for node in block.nodes:
            self.use_pos[node] = self._tick()
            if node.kind == "prim::Loop":
                self._entry_pos[node] = self._tick()
                self._tick()    # the loop header reads the trip count and the condition
            for b in node.blocks:
                self._number(b)
            self.def_pos[node] = self._tick()
        self.block_end[block] = self._tick()

    def _add_values(self, block: Block, param_pos: int, param_block: Block) -> None:
        for v in block.params:
            self._add(v, param_pos, param_block, block)
        for node in block.nodes:
            for v in node.outputs:
                self._add(v, self.def_pos[node], block, block)
            for b in node.blocks:
                if node.kind == "prim::Loop":
                    self._add_values(b, self._entry_pos[node], block)
                else:
                    self._add_values(b, self.block_start[b], b)

    def _add(self, value: Value, pos: int, def_block: Block, scope: Block) -> None:
        self.defined[value] = pos
        self._def_block[value] = def_block
        self._scope[value] = scope

    def use_position(self, user: Node) -> int:
        """Where `user` reads its inputs (a block's results: at the block's end)."""
        block = user.block
        return self.block_end[block] if user is block.return_node else self.use_pos[user]

    def live_at(self, value: Value, pos: int, block: Block) -> bool:
        """Whether `value` may still be read after the point `pos` in `block`."""
        scope = self._scope[value]
        chain = _ancestors(block)
        if scope not in chain or not self.defined[value] < pos:
            return False
        loops = [b.owner for b in chain[:chain.index(scope)] if b.owner.kind == "prim::Loop"]
        for user, index in value.uses:
            where = self._read_position(user, index)
            user_chain = _ancestors(user.block)
            if any(loop.blocks[0] in user_chain for loop in loops):
                return True     # read again by a later iteration of an enclosing loop
            if where > pos and not _exclusive(chain, user_chain):
                return True
        return False

    def _read_position(self, user: Node, index: int) -> int:
        """Where input `index` of `user` is read: a loop's header reads the trip count and
        the condition after the entry assignment of the body parameters."""
        if user.kind == "prim::Loop" and index < 2:
            return self._entry_pos[user] + 1     # the header's trip count and condition
        return self.use_position(user)

    def interferes(self, a: Value, b: Value) -> bool:
        """Whether a and b would clobber each other in one variable."""
        if a is b:
            return False
        if self.defined[a] == self.defined[b]:
            return True
        return (self.live_at(a, self.defined[b], self._def_block[b])
                or self.live_at(b, self.defined[a], self._def_block[a]))


def _exclusive(chain: list[Block], user_chain: list[Block]) -> bool:
    """Whether two points lie in different branches of one If (no path joins them)."""
    on_chain = set(chain)
    below = None
    for b in user_chain:
        if b in on_chain:
            index = chain.index(b)
            other = chain[index - 1] if index > 0 else None
            return (below is not None and other is not None and below is not other
                    and below.owner is other.owner)
        below = b
    return False
