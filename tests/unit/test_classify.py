"""Rule-based memory type classifier: English and Chinese tables per type, tie-breaking and confidence."""

from __future__ import annotations

import pytest

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.memory.classify import DEFAULT_CONFIDENCE, PRIORITY, Classification, classify
from agent_memory.domain.records import MemoryType

PREF = MemoryType.USER_PREFERENCE
CORR = MemoryType.CORRECTION
PROJ = MemoryType.PROJECT_STATE
TEMP = MemoryType.TEMPORARY
TASK = MemoryType.TASK_ACTION
KNOW = MemoryType.DOMAIN_KNOWLEDGE

EXAMPLES = [
    # user preferences
    ("The user prefers dark mode", PREF),
    ("I hate long standups", PREF),
    ("User always uses pnpm, never npm", PREF),
    ("She likes concise answers with code first", PREF),
    ("The user would rather get a diff than a full file", PREF),
    ("My favourite editor is Neovim", PREF),
    ("The customer doesn't like emoji in commit messages", PREF),
    ("我喜欢用Vim写代码", PREF),
    ("用户偏好深色主题", PREF),
    ("我不喜欢开长会", PREF),
    ("他习惯用空格缩进", PREF),
    # corrections
    ("Actually, the staging DB is on port 5433", CORR),
    ("Correction: the API key rotates monthly, not weekly", CORR),
    ("No, it's the blue button that opens settings", CORR),
    ("The on-call rotation is not weekly but biweekly", CORR),
    ("I was wrong earlier, the service is in eu-west-1", CORR),
    ("That's outdated: billing moved to Stripe", CORR),
    ("其实周会在周三", CORR),
    ("更正：API 密钥每月轮换", CORR),
    ("不是周二，而是周三开会", CORR),
    ("我之前说错了，服务在东京区域", CORR),
    # project state
    ("We decided to keep the monolith for now and split later", PROJ),
    ("The team is migrating billing to DynamoDB", PROJ),
    ("The release deadline is March 3", PROJ),
    ("We are currently working on the payments sprint", PROJ),
    ("Status: checkout v2 is blocked on the fraud review", PROJ),
    ("项目下周五上线", PROJ),
    ("我们正在把数据库迁移到DynamoDB", PROJ),
    ("我们决定先不拆分服务", PROJ),
    ("截止日期是3月3日", PROJ),
    # temporary
    ("I'm debugging the login bug right now", TEMP),
    ("For this session, answer in English", TEMP),
    ("Temporarily disable the cache while we profile", TEMP),
    ("I'm out this afternoon", TEMP),
    ("I prefer dark mode today", TEMP),
    ("今天下午我在外面", TEMP),
    ("暂时不要动生产环境", TEMP),
    ("这次会话请用英文回答", TEMP),
    # task actions
    ("To deploy, run `make deploy` from the repo root", TASK),
    ("Run `pytest -q` before pushing", TASK),
    ("First build the image, then push it to ECR", TASK),
    ("How to rotate the signing key: open the KMS console and create a new version", TASK),
    ("$ cdk deploy --all --require-approval never", TASK),
    ("部署步骤：先构建镜像，然后推送到ECR", TASK),
    ("先运行迁移脚本，再重启服务", TASK),
    # domain knowledge
    ("Kubernetes is a container orchestration platform", KNOW),
    ("BM25 is a ranking function used by search engines", KNOW),
    ("RRF stands for reciprocal rank fusion", KNOW),
    ("The capital of France is Paris", KNOW),
    ("S3 Vectors supports cosine and euclidean distance", KNOW),
    ("Kubernetes是一种容器编排平台", KNOW),
    ("幂等性是指同一操作执行多次结果相同", KNOW),
    ("Titan v2 返回1024维向量", KNOW),
]


@pytest.mark.parametrize(("text", "expected"), EXAMPLES)
def test_given_a_memory_sentence_when_classified_then_its_type_is_found(
    text: str, expected: MemoryType
) -> None:
    result = classify(text)

    assert result.type is expected, result
    assert 0.0 <= result.confidence <= 1.0


def test_given_each_type_when_counting_examples_then_both_languages_are_covered() -> None:
    # Guards the table itself: every classifiable type has English and Chinese examples.
    for memory_type in PRIORITY:
        texts = [text for text, expected in EXAMPLES if expected is memory_type]
        assert any(text.isascii() for text in texts), memory_type
        assert any(not text.isascii() for text in texts), memory_type


def test_given_a_declarative_fact_without_cues_when_classified_then_it_defaults_to_domain_knowledge() -> None:
    result = classify("The capital of France is Paris")

    assert result == Classification(KNOW, DEFAULT_CONFIDENCE, ["domain_knowledge:default"])


def test_given_a_matched_cue_when_classified_then_the_signal_names_the_type_and_cue() -> None:
    result = classify("The user prefers tabs")

    assert result.signals == ["user_preference:prefer"]


def test_given_two_types_with_equal_scores_when_classified_then_priority_breaks_the_tie() -> None:
    # Given one preference cue and one temporary cue of the same weight
    result = classify("I prefer dark mode today")

    # Then the higher-priority type wins, and the runner-up's cue is still reported
    assert PRIORITY.index(TEMP) < PRIORITY.index(PREF)
    assert result.type is TEMP
    assert result.signals == ["temporary:today", "user_preference:prefer"]


def test_given_competing_cues_when_classified_then_confidence_is_lower_than_for_a_clear_case() -> None:
    clear = classify("The user prefers dark mode")
    contested = classify("I prefer dark mode today")

    assert contested.confidence < clear.confidence


def test_given_more_agreeing_cues_when_classified_then_confidence_rises() -> None:
    one = classify("Run the linter before pushing")
    several = classify("To deploy, run `make deploy` from the repo root")

    assert one.type is several.type is TASK
    assert several.confidence > one.confidence


def test_given_a_correction_about_a_preference_when_classified_then_the_correction_wins() -> None:
    # A correction must supersede what it corrects, so it outranks the preference it talks about.
    result = classify("Actually, I prefer tea")

    assert result.type is CORR
    assert "user_preference:prefer" in result.signals


def test_given_full_width_text_when_classified_then_it_is_normalized_first() -> None:
    assert classify("Ｔｈｅ ｕｓｅｒ ｐｒｅｆｅｒｓ ｔａｂｓ").type is PREF


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_given_empty_text_when_classified_then_a_validation_error_says_what_to_pass(text: str) -> None:
    with pytest.raises(ValidationFailed, match="empty"):
        classify(text)


def test_given_a_long_text_when_classified_then_it_completes() -> None:
    text = ("not " * 10_000) + ("first " * 10_000) + ("先" * 20_000) + ("`" * 10_000)

    assert classify(text).type in PRIORITY
