"""Infrastructure-independent workflow definitions (Amazon States Language as data) for the CDK to deploy."""
