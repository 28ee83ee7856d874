"""Jobs (issue 29): long work (archive imports, large memory batches) accepted with 202 and run in the
background, with progress, visible only to the tenant and API key that submitted it."""
