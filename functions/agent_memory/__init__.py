"""Agent memory service: the memory layer AI agents keep when they change tools, models or machines."""

__version__ = "0.1.0"
