"""LLVM code generation: fused elementwise kernels, the JIT engine and the calling ABI."""
