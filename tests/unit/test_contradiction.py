"""Contradiction assessment: negation flips, replacements and value changes in English and Chinese, and the
pairs that must not be treated as contradictions."""

from __future__ import annotations

import pytest

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.memory.contradiction import Assessment, assess

SUPERSEDES = [
    # one preference verb, one topic: the value changed
    ("The user prefers light mode in the editor", "The user prefers dark mode in the editor"),
    ("User prefers American English spelling", "User prefers British English spelling"),
    # negation flips
    ("The user no longer likes coffee", "The user likes coffee"),
    ("The user doesn't like coffee", "The user likes coffee"),
    ("I stopped using vim", "I use vim for editing"),
    ("I never drink coffee", "I drink coffee every morning"),
    ("The team does not use feature flags anymore", "The team uses feature flags"),
    ("The user likes coffee again", "The user no longer likes coffee"),
    ("我不再喜欢咖啡了", "我喜欢咖啡"),
    ("我不喜欢咖啡", "我喜欢咖啡"),
    ("我们已经不用Jenkins了", "我们用Jenkins做CI"),
    ("用户不再使用Windows", "用户使用Windows"),
    # replacements naming the old value
    ("We switched from Postgres to DynamoDB", "We use Postgres for billing"),
    ("We moved from ECS to Lambda", "The API runs on ECS"),
    ("The team now uses DynamoDB instead of Postgres", "The team uses Postgres"),
    ("We replaced Jenkins with GitHub Actions", "CI runs on Jenkins"),
    ("Postgres was replaced by Aurora last quarter", "Billing data lives in Postgres"),
    ("The standup is not on Tuesday but on Wednesday", "The standup is on Tuesday"),
    ("We dropped Travis in favour of CircleCI", "Builds run on Travis"),
    ("我们从MySQL换成了PostgreSQL", "我们的数据库是MySQL"),
    ("用DynamoDB代替了Postgres", "账单服务用Postgres"),
    ("不是周二而是周三开会", "周二开会"),
    ("把Jenkins换成了GitHub Actions", "CI 用 Jenkins"),
    # replacements without the old value
    ("We migrated to GitHub Actions", "We use Jenkins for CI"),
    ("我们改用GitHub Actions了", "我们用Jenkins做CI"),
    # value changes
    ("The deadline moved to March 10", "The deadline is March 3"),
    ("My email is b@x.com", "My email is a@x.com"),
    ("The user prefers spaces", "The user prefers tabs"),
    ("I live in Shanghai now", "I live in Beijing"),
    ("Release date: June 5", "Release date: June 1"),
    ("截止日期推迟到3月10日", "截止日期是3月3日"),
    ("我的邮箱是b@x.com", "我的邮箱是a@x.com"),
    ("我住在上海", "我住在北京"),
]

UNCERTAIN = [
    # opposite polarity, different object
    ("I don't like tea", "I like coffee"),
    ("我不喜欢茶", "我喜欢咖啡"),
    # opposite polarity, different subject
    ("Bob doesn't like coffee", "Alice likes coffee"),
    ("他不喜欢咖啡", "我喜欢咖啡"),
    # negates only part of a list
    ("The user no longer likes tea", "The user likes coffee and tea"),
    # paraphrased negation: the words barely overlap
    ("The user gave up coffee", "The user drinks coffee every morning"),
    # replacement of something the old statement does not mention
    ("We switched from Jenkins to GitHub Actions", "We use Postgres"),
    ("Bob switched from coffee to tea", "The user drinks coffee"),
    # same frame, different detail far from the attribute: may be an additional fact
    ("The API is written in Rust", "The API is written in Go"),
    ("The user is allergic to shellfish", "The user is allergic to peanuts"),
    # the "positive" statement carries a negative meaning without a negation cue
    ("User does not want emoji in commit messages", "User wants emoji-free commit messages"),
    ("The user doesn't like meetings", "The user likes days without meetings"),
]

NONE = [
    # one preference verb, two topics: both preferences hold (found by the importers' USER.md fixtures)
    (
        "User prefers short commit messages in the imperative mood.",
        "User prefers British English spelling in docs.",
    ),
    ("User prefers pytest over unittest.", "User prefers small pull requests."),
    # same claim, same polarity: a duplicate, handled elsewhere
    ("The user likes coffee.", "the user likes coffee"),
    ("The user never liked coffee", "The user doesn't like coffee"),
    ("用户喜欢咖啡", "用户喜欢咖啡。"),
    # both can hold
    ("The user likes tea", "The user likes coffee"),
    ("我喜欢茶", "我喜欢咖啡"),
    ("The user likes coffee but not decaf", "The user likes coffee"),
    ("我特别喜欢咖啡", "我喜欢咖啡"),
    ("Alice is a designer", "Bob is a designer"),
    # a replacement the old statement already reflects
    ("We switched from Jenkins to GitHub Actions", "Deploys run on GitHub Actions"),
    ("We are migrating from Jenkins to GitHub Actions", "We are migrating from Jenkins to GitHub Actions."),
    # words that look negative but are not negations
    ("这个方案不错", "这个方案可行"),
    ("The user not only likes coffee but also tea", "The user likes coffee"),
    # paraphrases of one fact (near duplicates, merged elsewhere)
    (
        "Invoices are generated on the first day of every month",
        "Invoices are generated on the first day of each month",
    ),
    (
        "Invoices are created on the first day of every month",
        "Invoices are generated on the first day of every month",
    ),
    ("The user prefers dark mode in the editor", "The user prefers dark mode"),
    ("Never commit directly to main", "Do not commit directly to main"),
    ("我们不在周五部署", "我们周五不部署"),
    ("The user is a vegetarian", "The user is vegetarian"),
]


@pytest.mark.parametrize(("new", "old"), SUPERSEDES)
def test_given_a_negation_replacement_or_new_value_when_assessed_then_it_supersedes(
    new: str, old: str
) -> None:
    result = assess(new, old)

    assert result.kind == "supersedes", result
    assert result.reason


@pytest.mark.parametrize(("new", "old"), UNCERTAIN)
def test_given_opposite_cues_with_a_different_object_or_subject_when_assessed_then_it_is_uncertain(
    new: str, old: str
) -> None:
    result = assess(new, old)

    assert result.kind == "uncertain", result
    assert result.reason


@pytest.mark.parametrize(("new", "old"), NONE)
def test_given_compatible_statements_when_assessed_then_there_is_no_contradiction(new: str, old: str) -> None:
    result = assess(new, old)

    assert result.kind == "none", result


# --------------------------------------------------------------------------- reasons a person can read


@pytest.mark.parametrize(
    ("new", "old", "reason"),
    [
        (
            "The user no longer likes coffee",
            "The user likes coffee",
            "negation: 'no longer likes' contradicts 'likes' about 'coffee'",
        ),
        (
            "The user likes coffee again",
            "The user no longer likes coffee",
            "negation: 'likes' contradicts 'no longer likes' about 'coffee'",
        ),
        ("我不再喜欢咖啡了", "我喜欢咖啡", "negation: '不再喜欢' contradicts '喜欢' about '咖啡'"),
        (
            "We switched from Postgres to DynamoDB",
            "We use Postgres for billing",
            "replacement: new statement replaces 'postgres' with 'dynamodb', which the old one states",
        ),
        (
            "The deadline moved to March 10",
            "The deadline is March 3",
            "value change: 'deadline' was 'march 3', now 'march 10'",
        ),
        ("截止日期推迟到3月10日", "截止日期是3月3日", "value change: '截止日期' was '3月3日', now '3月10日'"),
        (
            "My email is b@x.com",
            "My email is a@x.com",
            "value change: 'my email' was 'a@x.com', now 'b@x.com'",
        ),
    ],
)
def test_given_a_contradiction_when_assessed_then_the_reason_names_the_cue_and_the_object(
    new: str, old: str, reason: str
) -> None:
    assert assess(new, old) == Assessment("supersedes", reason)


def test_given_a_negation_and_the_reverse_order_when_assessed_then_both_directions_supersede() -> None:
    # The newer statement wins whichever polarity it has.
    assert assess("I no longer use Windows", "I use Windows").kind == "supersedes"
    assert assess("I use Windows", "I no longer use Windows").kind == "supersedes"


def test_given_a_different_subject_when_assessed_then_the_reason_says_so() -> None:
    result = assess("Bob doesn't like coffee", "Alice likes coffee")

    assert "different subjects" in result.reason


def test_given_the_same_statement_when_assessed_then_the_reason_calls_it_a_duplicate() -> None:
    assert "duplicate" in assess("The user likes coffee!", "The user likes coffee").reason


@pytest.mark.parametrize(("new", "old"), [("", "The user likes coffee"), ("The user likes coffee", "  ")])
def test_given_an_empty_statement_when_assessed_then_a_validation_error_asks_for_both(
    new: str, old: str
) -> None:
    with pytest.raises(ValidationFailed, match="empty"):
        assess(new, old)


HOSTILE_PADDING = "switched from " * 3_000 + "not " * 3_000 + "不" * 5_000 + "从" * 5_000


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        # Only cue words, no subject or object in common (the old one has no content word at all): nothing
        # is negated or replaced, so both can hold.
        (HOSTILE_PADDING, "a " * 20_000 + "换成" * 5_000, "none"),
        # A plain negation flip followed, in both statements, by the same 47k characters of half-finished
        # replacement cues (no negation, no "to"): the padding must not hide the flip.
        (
            "The user no longer likes coffee. " + "switched from " * 3_000 + "从" * 5_000,
            "The user likes coffee. " + "switched from " * 3_000 + "从" * 5_000,
            "supersedes",
        ),
        # A replacement naming the old value, with a different hostile tail on each side.
        (
            "We switched from Postgres to DynamoDB, and " + "not " * 3_000,
            "We use Postgres for billing" + " 不" * 3_000,
            "supersedes",
        ),
    ],
    ids=["unrelated", "negation-then-padding", "replacement-then-padding"],
)
def test_given_long_hostile_statements_when_assessed_then_the_decision_is_still_right(
    new: str, old: str, expected: str
) -> None:
    # No wall-clock assertion (a backtracking blow-up shows as a hung suite); the decision must be the one
    # the same statements get without the padding.
    assert assess(new, old).kind == expected
