"""Deployable stacks."""

from .memory_stack import MemoryStack

__all__ = ["MemoryStack"]
