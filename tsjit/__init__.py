"""tsjit: TorchScript for NumPy, compiled with LLVM."""
