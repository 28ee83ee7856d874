"""The IAM contract tests itself (issue 30): the unchanged template passes every policy check on both
profiles, and each defect planted into a copy of it (tests/iam/mutations.py: the desk review's twelve and
one per policy kind) is caught, i.e. the contract reports at least one finding that the clean template does
not have. Run with `-s` to see the tally: `N of N plants caught` per profile.

The contract here is tests/iam/kinds.py `audit`: the corpus of the service's calls judged on identity and
endpoint policies (tests/iam/corpus.py), trust policies, key policies, the alarm topic's policy, Lambda
permissions, schedule roles, bucket policies, every Region an inference profile routes to, and neighbour
tenants (`acme` / `acme-2`) against every tenant-scoped grant."""

from __future__ import annotations

from typing import Any

import pytest
from infra_support import Synthesized

from tests.iam.kinds import audit
from tests.iam.mutations import ISSUE_PLANTS, PLANTS

_TALLY: dict[str, dict[str, bool]] = {}


@pytest.fixture(scope="module")
def clean(profile_synthesized: Synthesized) -> tuple[str, dict[str, Any], list[str]]:
    return profile_synthesized.profile, profile_synthesized.template, audit(profile_synthesized.template)


def test_the_unchanged_template_passes_every_policy_check(
    clean: tuple[str, dict[str, Any], list[str]],
) -> None:
    _, _, findings = clean
    assert findings == []


@pytest.mark.parametrize("plant", list(PLANTS))
def test_the_contract_catches_the_planted_defect(
    clean: tuple[str, dict[str, Any], list[str]], plant: str
) -> None:
    profile, template, baseline = clean
    mutated = PLANTS[plant](template)
    if mutated is None:
        pytest.skip(f"{profile} has nothing to plant {plant!r} in (no VPC endpoint)")
    findings = sorted(set(audit(mutated)) - set(baseline))
    _TALLY.setdefault(profile, {})[plant] = bool(findings)
    assert findings, f"[{profile}] the contract missed: {plant}"


def test_every_issue_plant_applies_to_isolated_and_all_but_the_endpoint_one_to_lean(
    profile_synthesized: Synthesized,
) -> None:
    applicable = [
        name for name, plant in ISSUE_PLANTS.items() if plant(profile_synthesized.template) is not None
    ]
    expected = len(ISSUE_PLANTS) - (1 if profile_synthesized.profile == "lean" else 0)
    assert len(applicable) == expected


def teardown_module() -> None:
    for profile, caught in sorted(_TALLY.items()):
        issue = [name for name in caught if name in ISSUE_PLANTS]
        print(
            f"\n[{profile}] mutation suite: {sum(caught.values())} of {len(caught)} plants caught "
            f"({sum(caught[n] for n in issue)} of {len(issue)} of issue 30's twelve applicable here)"
        )
