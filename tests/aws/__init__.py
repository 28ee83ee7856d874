"""Tests of the AWS adapters on moto and botocore Stubber (offline, no AWS account needed)."""
