"""The composition root: the only package that chooses adapters and assembles services.

- `config.py`: `RuntimeSettings`, the one settings object every builder takes.
- `aws.py`: one builder per Lambda function (a table there maps functions to builders); `aws_parts.py` the
  AWS parts they pick from; `parts.py` the parts both runtimes share.
- `local.py`: the local runtime (`agent-memory serve`, the CLI).
- `process.py`: the per-process cache of the functions' graphs (`API`, `CHAT`, `WORKER`, ...), which the
  handlers read; nothing is built at import.

tests/unit/test_layering.py fails when a module outside this package (and `adapters/`) imports an adapter."""
