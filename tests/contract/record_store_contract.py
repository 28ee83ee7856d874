"""The behaviour every `RecordStore` adapter must have.

Use it by subclassing in a test module and providing a `record_store` fixture that yields an empty store:

    class TestSqliteRecordStore(RecordStoreContract):
        @pytest.fixture
        def record_store(self, tmp_path): ...
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.domain.errors import ConcurrentModification, ValidationFailed
from agent_memory.domain.ports import RecordQuery, RecordStore, RecordWrite
from agent_memory.domain.records import (
    ChangeEntry,
    ChangeOperation,
    MemoryRecord,
    MemoryType,
    RecallLogEntry,
    Status,
    Tier,
    content_hash,
)

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TENANT_A = "acme"
TENANT_B = "globex"
BILLING = "/projects/billing"
SEARCH = "/projects/search"


def make_record(
    content: str = "The billing service uses Postgres 16",
    *,
    tenant: str = TENANT_A,
    namespace: str = BILLING,
    at: datetime = T0,
    **overrides: Any,
) -> MemoryRecord:
    """A valid record with every timestamp set explicitly to `at` (tests never depend on the clock)."""
    fields: dict[str, Any] = {
        "tenant": tenant,
        "namespace": namespace,
        "type": MemoryType.PROJECT_STATE,
        "content": content,
        "created_at": at,
        "updated_at": at,
        "last_access_at": at,
        "valid_from": at,
        "recorded_at": at,
        "content_hash": content_hash(content),
        "embedding_model": "hashing-v1:384:norm",
    }
    fields.update(overrides)
    return MemoryRecord(**fields)


def make_change(
    record: MemoryRecord,
    *,
    operation: ChangeOperation = ChangeOperation.CREATE,
    at: datetime | None = None,
    before: MemoryRecord | None = None,
) -> ChangeEntry:
    return ChangeEntry(
        tenant=record.tenant,
        namespace=record.namespace,
        record_id=record.id,
        operation=operation,
        actor="tester",
        at=at or record.updated_at,
        before=before.public_dict() if before else None,
        after=record.public_dict(),
    )


def next_version(record: MemoryRecord, **changes: Any) -> MemoryRecord:
    """The record as the service would write it next: changed fields and version + 1."""
    return record.model_copy(update={**changes, "version": record.version + 1})


def make_recall(
    *,
    tenant: str = TENANT_A,
    namespace: str = BILLING,
    at: datetime = T0,
    query: str = "postgres",
    match_scores: tuple[float, ...] | None = (1.0, 0.35),
) -> RecallLogEntry:
    return RecallLogEntry(
        tenant=tenant,
        namespace=namespace,
        query_hash=f"h-{query}",
        query_terms=query.split(),
        result_ids=["mem_1", "mem_2"],
        scores=[0.9, 0.4],
        match_scores=None if match_scores is None else list(match_scores),
        at=at,
    )


class RecordStoreContract:
    """Subclasses provide the `record_store` fixture (an empty store)."""

    @staticmethod
    def create(store: RecordStore, *records: MemoryRecord) -> None:
        store.commit([RecordWrite(r, None) for r in records], [make_change(r) for r in records])

    # ------------------------------------------------------------------ create / get

    def test_given_created_record_when_get_then_equal_record_is_returned(self, record_store: RecordStore):
        record = make_record(metadata={"ticket": "BILL-7", "urgent": True}, conflict_group="db-choice")
        self.create(record_store, record)

        assert record_store.get(TENANT_A, record.id) == record

    def test_given_no_record_when_get_then_none(self, record_store: RecordStore):
        assert record_store.get(TENANT_A, "mem_missing") is None

    def test_given_existing_id_when_created_again_then_conflict_and_original_kept(
        self, record_store: RecordStore
    ):
        original = make_record("first")
        self.create(record_store, original)
        clash = make_record("second", id=original.id)

        with pytest.raises(ConcurrentModification):
            record_store.commit([RecordWrite(clash, None)], [make_change(clash)])

        assert record_store.get(TENANT_A, original.id) == original
        assert len(record_store.list_changes(TENANT_A).items) == 1

    # ------------------------------------------------------------------ optimistic concurrency

    def test_given_current_version_when_updated_then_new_content_is_stored(self, record_store: RecordStore):
        record = make_record()
        self.create(record_store, record)
        updated = next_version(record, content="Billing moved to Postgres 17", updated_at=T0 + timedelta(1))

        record_store.commit([RecordWrite(updated, expected_version=record.version)], [make_change(updated)])

        stored = record_store.get(TENANT_A, record.id)
        assert stored is not None
        assert stored.content == "Billing moved to Postgres 17"
        assert stored.version == record.version + 1

    def test_given_stale_version_when_updated_then_conflict_and_data_unchanged(
        self, record_store: RecordStore
    ):
        record = make_record()
        self.create(record_store, record)
        first = next_version(record, content="first writer wins")
        record_store.commit([RecordWrite(first, expected_version=record.version)], [make_change(first)])
        second = next_version(record, content="second writer is late")

        with pytest.raises(ConcurrentModification):
            record_store.commit([RecordWrite(second, expected_version=record.version)], [make_change(second)])

        assert record_store.get(TENANT_A, record.id) == first
        assert [c.after["content"] for c in record_store.list_changes(TENANT_A).items if c.after] == [
            record.content,
            "first writer wins",
        ]

    def test_given_missing_record_when_updated_then_conflict(self, record_store: RecordStore):
        ghost = make_record(version=3)

        with pytest.raises(ConcurrentModification):
            record_store.commit([RecordWrite(ghost, expected_version=2)], [])

        assert record_store.get(TENANT_A, ghost.id) is None

    def test_given_one_failing_write_in_batch_when_committed_then_nothing_is_written(
        self, record_store: RecordStore
    ):
        existing = make_record("existing")
        self.create(record_store, existing)
        fresh = make_record("fresh", at=T0 + timedelta(hours=1))
        updated = next_version(existing, content="changed")
        stale = next_version(existing, content="stale")

        with pytest.raises(ConcurrentModification):
            record_store.commit(
                [
                    RecordWrite(fresh, None),
                    RecordWrite(updated, expected_version=existing.version),
                    RecordWrite(stale, expected_version=existing.version),  # fails: version moved above
                ],
                [make_change(fresh), make_change(updated, operation=ChangeOperation.UPDATE)],
            )

        assert record_store.get(TENANT_A, fresh.id) is None
        assert record_store.get(TENANT_A, existing.id) == existing
        assert [c.record_id for c in record_store.list_changes(TENANT_A).items] == [existing.id]

    # ------------------------------------------------------------------ state transitions

    def test_given_status_moved_when_transition_committed_then_conflict_and_successor_not_created(
        self, record_store: RecordStore
    ):
        # Given a record archived at the version a correction read (e.g. archive won a race)
        record = make_record()
        self.create(record_store, record)
        archived = next_version(record, status=Status.ARCHIVED)
        forged = archived.model_copy(update={"version": record.version})  # same version, other status
        record_store.commit([RecordWrite(forged, expected_version=record.version)], [])
        successor = make_record("The billing service uses Postgres 17", supersedes=record.id)
        retired = next_version(record, status=Status.ARCHIVED, superseded_by=successor.id)

        # When the correction commits expecting the version it read and the status "active"
        with pytest.raises(ConcurrentModification) as refused:
            record_store.commit(
                [RecordWrite(successor, None), RecordWrite(retired, record.version, Status.ACTIVE)],
                [make_change(successor), make_change(retired)],
            )

        # Then nothing is written: no successor, the record as it was, no change entries
        assert refused.value.details["stored_status"] == "archived"
        assert refused.value.details["expected_status"] == "active"
        assert record_store.get(TENANT_A, successor.id) is None
        assert record_store.get(TENANT_A, record.id) == forged
        assert [c.record_id for c in record_store.list_changes(TENANT_A).items] == [record.id]

    def test_given_two_transitions_from_one_state_when_committed_then_only_the_first_applies(
        self, record_store: RecordStore
    ):
        # Given an active record and two corrections that both read it at its version
        record = make_record()
        self.create(record_store, record)
        commits = []
        for n in (1, 2):
            successor = make_record(f"The billing service uses Postgres 1{n}", supersedes=record.id)
            retired = next_version(record, status=Status.ARCHIVED, superseded_by=successor.id)
            commits.append(
                (
                    successor,
                    [RecordWrite(successor, None), RecordWrite(retired, record.version, Status.ACTIVE)],
                )
            )

        # When both commit, one after the other
        record_store.commit(commits[0][1], [])
        with pytest.raises(ConcurrentModification):
            record_store.commit(commits[1][1], [])

        # Then one successor exists and the record points to it: no fork
        stored = record_store.get(TENANT_A, record.id)
        assert stored is not None and stored.superseded_by == commits[0][0].id
        assert record_store.get(TENANT_A, commits[1][0].id) is None

    # ------------------------------------------------------------------ list

    def test_given_mixed_records_when_listed_with_filters_then_only_matches(self, record_store: RecordStore):
        active = make_record("active note", at=T0)
        archived = make_record("archived note", at=T0 + timedelta(minutes=1), status=Status.ARCHIVED)
        other_ns = make_record("search note", namespace=SEARCH, at=T0 + timedelta(minutes=2))
        preference = make_record(
            "prefers tabs",
            at=T0 + timedelta(minutes=3),
            type=MemoryType.USER_PREFERENCE,
            tier=Tier.SHORT_TERM,
            conflict_group="indent",
        )
        self.create(record_store, active, archived, other_ns, preference)

        def ids(**filters: Any) -> list[str]:
            return [r.id for r in record_store.list(TENANT_A, RecordQuery(**filters)).items]

        assert ids() == [active.id, archived.id, other_ns.id, preference.id]
        assert ids(namespaces=(SEARCH,)) == [other_ns.id]
        assert ids(namespaces=(BILLING,), statuses=(Status.ACTIVE,)) == [active.id, preference.id]
        assert ids(statuses=(Status.ARCHIVED,)) == [archived.id]
        assert ids(types=(MemoryType.USER_PREFERENCE,)) == [preference.id]
        assert ids(tiers=(Tier.SHORT_TERM,)) == [preference.id]
        assert ids(conflict_group="indent") == [preference.id]
        assert ids(last_access_before=T0 + timedelta(minutes=2)) == [active.id, archived.id]

    def test_given_more_records_than_a_page_when_paged_then_all_seen_once_in_order(
        self, record_store: RecordStore
    ):
        # Pairs share created_at, so the id must break ties for the order and the cursor.
        records = [make_record(f"note {i}", at=T0 + timedelta(minutes=i // 2)) for i in range(11)]
        self.create(record_store, *reversed(records))
        expected = [r.id for r in sorted(records, key=lambda r: (r.created_at, r.id))]

        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            page = record_store.list(TENANT_A, RecordQuery(limit=4, cursor=cursor))
            seen.extend(r.id for r in page.items)
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break

        assert seen == expected
        assert pages == 3

    def test_given_filtered_listing_when_paged_then_filter_holds_on_every_page(
        self, record_store: RecordStore
    ):
        records = [
            make_record(f"n{i}", at=T0 + timedelta(minutes=i), namespace=BILLING if i % 2 else SEARCH)
            for i in range(9)
        ]
        self.create(record_store, *records)

        first = record_store.list(TENANT_A, RecordQuery(namespaces=(BILLING,), limit=3))
        second = record_store.list(
            TENANT_A, RecordQuery(namespaces=(BILLING,), limit=3, cursor=first.next_cursor)
        )

        assert [r.id for r in first.items + second.items] == [r.id for r in records if r.namespace == BILLING]
        assert second.next_cursor is None

    def test_given_a_namespace_tree_when_listed_below_then_children_only_never_siblings_named_alike(
        self, record_store: RecordStore
    ):
        names = ["/me", "/me/users/u-1", "/me/users/u-2", "/me/a", "/meta", "/me-too", "/mf", "/other/me"]
        records = [
            make_record(f"fact {i}", namespace=ns, at=T0 + timedelta(minutes=i)) for i, ns in enumerate(names)
        ]
        self.create(record_store, *records)
        self.create(record_store, make_record("elsewhere", tenant=TENANT_B, namespace="/me/users/u-1"))

        def listed(query: RecordQuery) -> list[str]:
            seen, cursor = [], None
            while True:
                page = record_store.list(
                    TENANT_A, RecordQuery(**{**query.__dict__, "cursor": cursor, "limit": 2})
                )
                seen.extend(r.namespace for r in page.items)
                if page.next_cursor is None:
                    return seen
                cursor = page.next_cursor

        # A tree lists by namespace, then oldest first: the same order (and pages) on every store.
        assert listed(RecordQuery(namespaces_below=("/me",))) == ["/me/a", "/me/users/u-1", "/me/users/u-2"]
        assert listed(RecordQuery(namespaces=("/me",), namespaces_below=("/me",))) == [
            "/me",
            "/me/a",
            "/me/users/u-1",
            "/me/users/u-2",
        ]
        assert listed(RecordQuery(namespaces=("/mf",), namespaces_below=("/me/users",))) == [
            "/me/users/u-1",
            "/me/users/u-2",
            "/mf",
        ]
        assert listed(RecordQuery(namespaces_below=("/nobody",))) == []

    def test_given_a_tree_when_paged_then_pages_are_by_namespace_then_oldest_first_and_each_record_once(
        self, record_store: RecordStore
    ):
        # Names chosen around the key's separators: `-` and `.` sort below `/`, `0` right after it.
        names = ["/me/b", "/me", "/me/a-b", "/me/a/x", "/me/a", "/me.x", "/me0", "/mexico", "/me-too"]
        records = [
            make_record(f"fact {i}", namespace=names[i % len(names)], at=T0 + timedelta(minutes=i // 4))
            for i in range(27)
        ]
        self.create(record_store, *reversed(records))
        tree = [r for r in records if r.namespace == "/me" or r.namespace.startswith("/me/")]
        expected = [r.id for r in sorted(tree, key=lambda r: (r.namespace, r.created_at, r.id))]

        for limit in (1, 4, 7, 100):
            seen, cursor, pages = [], None, 0
            while True:
                page = record_store.list(
                    TENANT_A,
                    RecordQuery(namespaces=("/me",), namespaces_below=("/me",), limit=limit, cursor=cursor),
                )
                assert len(page.items) <= limit
                seen.extend(r.id for r in page.items)
                pages += 1
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert seen == expected, limit
            assert pages == -(-len(expected) // limit)  # no empty or short page before the end

    def test_given_overlapping_tree_selectors_when_listed_then_each_record_once(
        self, record_store: RecordStore
    ):
        names = ["/p/alpha", "/p/alpha/x", "/p/alpha2", "/p/alpha2/y", "/p/beta"]
        records = [
            make_record(f"n {i}", namespace=ns, at=T0 + timedelta(minutes=i)) for i, ns in enumerate(names)
        ]
        self.create(record_store, *records)

        page = record_store.list(
            TENANT_A,
            RecordQuery(namespaces=("/p/alpha", "/p/alpha/x"), namespaces_below=("/p/alpha", "/p/alpha")),
        )

        # A key limited to /p/alpha (and below) never reaches /p/alpha2, named alike, nor a sibling.
        assert [r.namespace for r in page.items] == ["/p/alpha", "/p/alpha/x"]

    def test_given_a_tree_and_other_filters_when_listed_below_then_both_hold(self, record_store: RecordStore):
        kept = make_record("kept", namespace="/me/x", at=T0)
        archived = make_record(
            "gone", namespace="/me/y", at=T0 + timedelta(minutes=1), status=Status.ARCHIVED
        )
        self.create(record_store, kept, archived, make_record("top", namespace="/me", at=T0))

        page = record_store.list(TENANT_A, RecordQuery(namespaces_below=("/me",), statuses=(Status.ACTIVE,)))

        assert [r.id for r in page.items] == [kept.id]

    def test_given_garbage_cursor_when_listed_then_validation_error(self, record_store: RecordStore):
        with pytest.raises(ValidationFailed):
            record_store.list(TENANT_A, RecordQuery(cursor="not-a-cursor!"))

    def test_given_records_when_counted_then_grouped_by_status_tier_and_type(self, record_store: RecordStore):
        self.create(
            record_store,
            make_record("a"),
            make_record("b", status=Status.ARCHIVED),
            make_record("c", type=MemoryType.EPISODE, tier=Tier.SHORT_TERM),
            make_record("d", namespace=SEARCH),
        )

        everything = record_store.counts(TENANT_A)
        billing = record_store.counts(TENANT_A, BILLING)

        assert everything.by_status == {"active": 3, "archived": 1}
        assert everything.by_tier == {"long_term": 3, "short_term": 1}
        assert everything.by_type == {"project_state": 3, "episode": 1}
        assert billing.by_status == {"active": 2, "archived": 1}

    # ------------------------------------------------------------------ lookups

    def test_given_same_content_in_two_namespaces_when_found_by_hash_then_only_that_namespace(
        self, record_store: RecordStore
    ):
        billing = make_record("Deploys happen on Tuesdays")
        search = make_record("Deploys happen on Tuesdays", namespace=SEARCH)
        unrelated = make_record("Something else")
        self.create(record_store, billing, search, unrelated)

        found = record_store.find_by_hash(TENANT_A, BILLING, content_hash("deploys  happen on tuesdays"))

        assert [r.id for r in found] == [billing.id]
        assert record_store.find_by_hash(TENANT_A, BILLING, content_hash("never stored")) == []

    def test_given_ids_when_get_many_then_existing_in_given_order(self, record_store: RecordStore):
        first, second, third = (make_record(f"r{i}", at=T0 + timedelta(minutes=i)) for i in range(3))
        self.create(record_store, first, second, third)

        found = record_store.get_many(TENANT_A, [third.id, "mem_missing", first.id, second.id])

        assert [r.id for r in found] == [third.id, first.id, second.id]

    # ------------------------------------------------------------------ touch

    def test_given_record_when_touched_then_access_updated_without_version_bump(
        self, record_store: RecordStore
    ):
        record = make_record()
        self.create(record_store, record)
        later = T0 + timedelta(days=3)

        record_store.touch(TENANT_A, [record.id, "mem_missing"], later)
        record_store.touch(TENANT_A, [record.id], later + timedelta(hours=1))

        stored = record_store.get(TENANT_A, record.id)
        assert stored is not None
        assert stored.access_count == record.access_count + 2
        assert stored.last_access_at == later + timedelta(hours=1)
        assert stored.version == record.version
        # The access column moved too: the record is no longer "unused since before `later`".
        stale = record_store.list(TENANT_A, RecordQuery(last_access_before=later))
        assert stale.items == []

    def test_given_touched_record_when_updated_with_prior_version_then_no_conflict(
        self, record_store: RecordStore
    ):
        record = make_record()
        self.create(record_store, record)
        record_store.touch(TENANT_A, [record.id], T0 + timedelta(hours=5))
        updated = next_version(record, content="edited after a recall")

        record_store.commit([RecordWrite(updated, expected_version=record.version)], [])

        stored = record_store.get(TENANT_A, record.id)
        assert stored is not None
        assert stored.content == "edited after a recall"

    # ------------------------------------------------------------------ change log

    def test_given_changes_when_listed_then_oldest_first_and_pageable(self, record_store: RecordStore):
        record = make_record()
        self.create(record_store, record)
        current = record
        for hour in (3, 1, 2):  # committed out of time order on purpose
            updated = next_version(current, content=f"edit at +{hour}h")
            record_store.commit(
                [RecordWrite(updated, expected_version=current.version)],
                [make_change(updated, operation=ChangeOperation.UPDATE, at=T0 + timedelta(hours=hour))],
            )
            current = updated
        other = make_record("other record", namespace=SEARCH)
        record_store.commit([RecordWrite(other, None)], [make_change(other, at=T0 + timedelta(minutes=30))])

        first = record_store.list_changes(TENANT_A, record_id=record.id, limit=2)
        second = record_store.list_changes(TENANT_A, record_id=record.id, limit=2, cursor=first.next_cursor)

        times = [c.at for c in first.items + second.items]
        assert times == [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2), T0 + timedelta(hours=3)]
        assert second.next_cursor is None
        assert [c.record_id for c in record_store.list_changes(TENANT_A, namespace=SEARCH).items] == [
            other.id
        ]
        assert len(record_store.list_changes(TENANT_A).items) == 5

    # ------------------------------------------------------------------ recall log

    def test_given_recalls_when_listed_since_then_only_newer_in_that_namespace(
        self, record_store: RecordStore
    ):
        old = make_recall(at=T0 - timedelta(days=2), query="old")
        edge = make_recall(at=T0, query="edge")
        new = make_recall(at=T0 + timedelta(hours=1), query="new")
        elsewhere = make_recall(namespace=SEARCH, at=T0 + timedelta(hours=1))
        for entry in (new, old, elsewhere, edge):
            record_store.log_recall(entry)

        recalls = record_store.list_recalls(TENANT_A, BILLING, since=T0)

        assert [r.id for r in recalls] == [edge.id, new.id]
        assert recalls[1] == new and recalls[1].match_scores == [1.0, 0.35]

    def test_given_a_recall_logged_without_match_scores_then_it_reads_back_without_them(
        self, record_store: RecordStore
    ):
        """An entry logged before match strengths were recorded stays readable; dreaming falls back to its
        scores (dreaming/light.attach_recalls)."""
        earlier = make_recall(match_scores=None)
        record_store.log_recall(earlier)

        (loaded,) = record_store.list_recalls(TENANT_A, BILLING, since=T0)

        assert loaded == earlier and loaded.match_scores is None and loaded.scores == [0.9, 0.4]

    # ------------------------------------------------------------------ tenant isolation

    def test_given_two_tenants_when_b_reads_then_a_is_invisible(self, record_store: RecordStore):
        secret = make_record("tenant A's secret plan", conflict_group="plan")
        self.create(record_store, secret)
        record_store.log_recall(make_recall(tenant=TENANT_A))
        own = make_record("tenant B's note", tenant=TENANT_B, at=T0 + timedelta(minutes=5))
        self.create(record_store, own)

        assert record_store.get(TENANT_B, secret.id) is None
        assert record_store.get_many(TENANT_B, [secret.id, own.id]) == [own]
        assert record_store.find_by_hash(TENANT_B, BILLING, secret.content_hash) == []
        assert [r.id for r in record_store.list(TENANT_B, RecordQuery()).items] == [own.id]
        assert record_store.list(TENANT_B, RecordQuery(conflict_group="plan")).items == []
        assert record_store.counts(TENANT_B).by_status == {"active": 1}
        assert [c.record_id for c in record_store.list_changes(TENANT_B).items] == [own.id]
        assert record_store.list_changes(TENANT_B, record_id=secret.id).items == []
        assert record_store.list_recalls(TENANT_B, BILLING, since=T0 - timedelta(days=1)) == []

    def test_given_two_tenants_when_b_writes_a_ids_then_a_is_untouched(self, record_store: RecordStore):
        secret = make_record("tenant A's record")
        self.create(record_store, secret)

        record_store.touch(TENANT_B, [secret.id], T0 + timedelta(days=1))
        with pytest.raises(ConcurrentModification):
            hijack = next_version(secret, tenant=TENANT_B, content="overwritten by B")
            record_store.commit([RecordWrite(hijack, expected_version=secret.version)], [])

        assert record_store.get(TENANT_A, secret.id) == secret

    def test_given_same_id_in_two_tenants_when_created_then_both_exist_separately(
        self, record_store: RecordStore
    ):
        mine = make_record("A's copy")
        theirs = make_record("B's copy", tenant=TENANT_B, id=mine.id)

        self.create(record_store, mine)
        self.create(record_store, theirs)

        assert record_store.get(TENANT_A, mine.id) == mine
        assert record_store.get(TENANT_B, mine.id) == theirs
