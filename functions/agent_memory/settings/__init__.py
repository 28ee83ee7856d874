"""Configuration from the environment, parsed once into typed models: `service` (every runtime's
AGENT_MEMORY_ variables) and `dreaming` (the sweep's AGENT_MEMORY_DREAMING_ variables)."""
