"""The Python SDK (clients/python) and its MCP server."""
