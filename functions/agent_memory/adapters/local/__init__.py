"""Local (embedded) adapters: SQLite record store, in-process search index, offline embedders."""
