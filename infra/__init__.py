"""The CDK app of the agent memory service: typed config, constructs (one per concern), stacks, bundling.

Nothing here makes an AWS call at synth time and nothing here holds business logic."""
