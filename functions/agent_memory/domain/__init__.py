"""Pure domain logic. No boto3, no environment variables, no I/O except through `ports`."""
