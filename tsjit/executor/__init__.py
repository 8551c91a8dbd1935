"""Running graphs: the GraphExecutor of each scripted function."""
from .graph_executor import GraphExecutor

__all__ = ["GraphExecutor"]
