"""The entry point and task prologues a reduction kernel's module shares between its row
and column forms: how the pool's task and the exported entry unpack the kernel ABI
(operand tuples, the block, the scalars, the job's floating-point status). Apart from
``reduction.py`` so that module reads as the rows' computation and stays one sitting long.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from tsjit.codegen.elementwise import convert_scalar
from tsjit.codegen.ir_util import (
    ARRAY_DATA_OFFSET,
    I32,
    I64,
    PTR,
    element,
    i64,
    load_field,
    stack_slot,
    tuple_item,
)
from tsjit.codegen.kernel_abi import PARALLEL_FOR, entry_parameter_types

__all__ = ["KernelPrologues"]


class KernelPrologues:
    """Mixed into the row (and column) kernel builders, whose ``function``, ``module``,
    ``spec``, operand counts, state and context types these methods use."""

    def task_prologue(self, name: str) -> tuple:
        """The start of the pool's task ``name(context, begin, end)``: ``(fn, builder,
        data pointers, block, status, state)``, this thread's flags cleared and the
        scalars in the state."""
        fn = self.function(name, [PTR, I64, I64])
        context = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block())

        def field(k: int) -> ir.Value:
            return b.load(b.gep(context, [ir.Constant(I32, 0), ir.Constant(I32, k)],
                                source_etype=self.context_type), typ=PTR)

        data, block, scalars, status = field(0), field(1), field(2), field(3)
        self.clear_fp_status(b)
        state = stack_slot(b, self.state_type)
        for s, i in enumerate(self.scalar_inputs):
            value = b.load(b.gep(scalars, [ir.Constant(I32, 0), ir.Constant(I32, s)],
                                 source_etype=self.scalars_type), typ=self.scalars_type.elements[s])
            b.store(value, self.state_slot(b, state, i))
        bases = [b.load(element(b, data, i64(k), PTR), typ=PTR) for k in range(self.n_operands)]
        return fn, b, bases, block, status, state


    def call_parallel_for(self, b: ir.IRBuilder, task: ir.Function, context: ir.Value,
                          count: ir.Value, grain: ir.Value) -> None:
        """``task(context, begin, end)`` over [0, count) on the runtime's threads."""
        parallel_for = self.module.globals.get(PARALLEL_FOR) or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64]), PARALLEL_FOR)
        b.call(parallel_for, [task, context, count, grain])

    def entry_prologue(self) -> tuple:
        """The entry point up to its dispatch: ``(fn, builder, context, block, status)``,
        the context holding the operands' data pointers, the block, the scalars and the
        job's floating-point status."""
        spec = self.spec
        params = [ir.DoubleType() if c == "double" else I64
                  for c in entry_parameter_types(spec)]   # as elementwise kernels'
        fn = ir.Function(self.module, ir.FunctionType(I64, params), name=self.name)
        fn.attributes.add("nounwind")
        b = ir.IRBuilder(fn.append_basic_block())
        scalars = stack_slot(b, self.scalars_type)
        status = stack_slot(b, I32, ir.Constant(I32, 0))
        for s, i in enumerate(self.scalar_inputs):
            value = convert_scalar(b, fn.args[1 + s], np.dtype(spec.inputs[i].dtype))
            b.store(value, b.gep(scalars, [ir.Constant(I32, 0), ir.Constant(I32, s)],
                                 source_etype=self.scalars_type))
        operands = b.inttoptr(fn.args[0], PTR)
        data = stack_slot(b, ir.ArrayType(PTR, self.n_operands))
        for k in range(self.n_operands):
            b.store(load_field(b, tuple_item(b, operands, i64(k)), ARRAY_DATA_OFFSET, PTR),
                    element(b, data, i64(k), PTR))
        block = load_field(b, tuple_item(b, operands, i64(self.n_operands)), ARRAY_DATA_OFFSET,
                           PTR)
        context = stack_slot(b, self.context_type)
        for k, value in enumerate((data, block, scalars, status)):
            b.store(value, b.gep(context, [ir.Constant(I32, 0), ir.Constant(I32, k)],
                                 source_etype=self.context_type))
        return fn, b, context, block, status
