"""Adapters implementing the domain ports: `local` (embedded) and `aws` (the only place boto3 lives)."""
