"""Bump the CalVer version in pyproject.toml: python scripts/bump_version.py [--patch]."""

import datetime
import re
import sys
from pathlib import Path

path = Path("pyproject.toml")
text = path.read_text(encoding="utf-8")
current = re.search(r'^version = "(\d{4})\.(\d{1,2})\.(\d+)"', text, re.M)
today = datetime.date.today()
if current and (int(current[1]), int(current[2])) == (today.year, today.month):
    new = f"{today.year}.{today.month}.{int(current[3]) + 1}"
else:
    new = f"{today.year}.{today.month}.0"
path.write_text(re.sub(r'^version = ".*"', f'version = "{new}"', text, count=1, flags=re.M), encoding="utf-8")
print(new)
sys.exit(0)
