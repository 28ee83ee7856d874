"""Configuration from the environment, parsed once into typed models: `service` (every runtime's
AGENT_MEMORY_ variables), `dreaming` (the sweep's AGENT_MEMORY_DREAMING_ variables) and `handlers` (what the
Lambda entry points read before building services: metrics namespace, API keys table, fallback tenants)."""
