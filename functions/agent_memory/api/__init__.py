"""HTTP API: Powertools Routers shared by the Lambda resolver and the local ASGI resolver."""
