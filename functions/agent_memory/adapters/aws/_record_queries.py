"""Query building for the record store: FilterExpressions and paged Query requests on the memory table and
its GSIs, each GSI response confined to the caller's tenant (`_record_items.own_items`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ._dynamo import attr, expr_values, read_text
from ._errors import upstream_errors
from ._record_items import Item, check_tenant, own_items


class Filter:
    """Builds one FilterExpression with its own placeholder names and values."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.names: dict[str, str] = {}
        self.values: dict[str, dict[str, Any]] = {}
        self._counter = itertools.count()

    def _name(self, attribute: str) -> str:
        name = f"#f{next(self._counter)}"
        self.names[name] = attribute
        return name

    def _value(self, value: str) -> str:
        placeholder = f":f{next(self._counter)}"
        self.values[placeholder] = attr(value)
        return placeholder

    def one_of(self, attribute: str, values: Sequence[str]) -> None:
        if not values:
            return
        name = self._name(attribute)
        placeholders = [self._value(value) for value in dict.fromkeys(values)]
        self.clauses.append(f"{name} IN ({', '.join(placeholders)})")

    def compare(self, attribute: str, operator: str, value: str) -> None:
        name = self._name(attribute)
        self.clauses.append(f"{name} {operator} {self._value(value)}")

    def namespace_tree(self, exact: Sequence[str], below: Sequence[str]) -> None:
        """Records of one of the `exact` namespaces or of a namespace strictly below one of `below`."""
        if not exact and not below:
            return
        name = self._name("namespace")
        either = []
        if exact:
            placeholders = [self._value(value) for value in dict.fromkeys(exact)]
            either.append(f"{name} IN ({', '.join(placeholders)})")
        for parent in dict.fromkeys(below):
            either.append(f"begins_with({name}, {self._value(parent + '/')})")
        self.clauses.append(f"({' OR '.join(either)})")

    def apply(self, request: dict[str, Any]) -> None:
        if not self.clauses:
            return
        request["FilterExpression"] = " AND ".join(self.clauses)
        request.setdefault("ExpressionAttributeNames", {}).update(self.names)
        request.setdefault("ExpressionAttributeValues", {}).update(self.values)


class Queries:
    """Paged Query requests on one table with the tenant's client."""

    def __init__(self, table: str, client_factory: Callable[[str], Any], page_size: int | None) -> None:
        self.table = table
        self._client_factory = client_factory
        self._page_size = page_size

    def client(self, tenant: str) -> Any:
        check_tenant(tenant)
        return self._client_factory(tenant)

    def page_limit(self, limit_hint: int | None) -> int:
        if self._page_size is not None:
            return self._page_size
        if limit_hint is None:
            return 1000
        return min(1000, max(200, limit_hint + 1))

    @staticmethod
    def responses(client: Any, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Each Query response, following LastEvaluatedKey to the end."""
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            yield response
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    def paginate(self, client: Any, request: dict[str, Any]) -> Iterator[Item]:
        for response in self.responses(client, request):
            yield from response.get("Items", [])

    def key_range(
        self,
        tenant: str,
        index: str,
        keys: tuple[str, str],
        partition: str,
        bounds: tuple[str, str] | None,
        after: str | None,
        flt: Filter,
        *,
        limit_hint: int | None = None,
        projection: Sequence[str] = (),
    ) -> Iterator[tuple[str, Item]]:
        """The tenant's items of one GSI partition (`keys`: its partition and sort attributes) whose sort key
        is within `bounds` (inclusive) and after `after`, in order, as (sort key, item)."""
        client = self.client(tenant)
        pk_name, sk_name = keys
        if bounds is not None and after is not None and after >= bounds[1]:
            return  # the cursor is past this range (DynamoDB refuses BETWEEN with its bounds reversed)
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": index,
            "ExpressionAttributeNames": {"#pk": pk_name},
            "ExpressionAttributeValues": expr_values(pk=partition),
            "KeyConditionExpression": "#pk = :pk",
            "Limit": self.page_limit(limit_hint),
        }
        values, names = request["ExpressionAttributeValues"], request["ExpressionAttributeNames"]
        if bounds is not None:
            low = bounds[0] if after is None else max(bounds[0], after)
            request["KeyConditionExpression"] += " AND #sk BETWEEN :lo AND :hi"
            names["#sk"] = sk_name
            values.update(expr_values(lo=low, hi=bounds[1]))
        elif after is not None:
            request["KeyConditionExpression"] += " AND #sk > :lo"
            names["#sk"] = sk_name
            values.update(expr_values(lo=after))
        if projection:
            # `pk` always: the tenant check needs it.
            attributes = {
                f"#p{i}": name for i, name in enumerate(dict.fromkeys((sk_name, "pk", *projection)))
            }
            names.update(attributes)
            request["ProjectionExpression"] = ", ".join(attributes)
        flt.apply(request)
        for response in self.responses(client, request):
            # Filtering each response (not the final page) keeps pagination intact.
            for item in own_items(response.get("Items", []), tenant, index):
                position = read_text(item, sk_name)
                if after is not None and position <= after:
                    continue  # BETWEEN is inclusive: skip the cursor item itself
                yield position, item

    def index(
        self,
        tenant: str,
        index: str,
        partition: str,
        prefix: str,
        after: str | None,
        flt: Filter,
        limit_hint: int | None = None,
        projection: Sequence[str] = (),
    ) -> Iterator[tuple[str, Item]]:
        """Items of one GSI partition whose sort key starts with `prefix`, after position `after`, in order.
        Yields (position without the prefix, item); `projection` limits the attributes returned."""
        bounds = None
        if prefix:
            # BETWEEN keeps other item kinds sharing the partition out ("REC$" sorts right after "REC#…").
            bounds = (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))
        keys = (f"{index}pk", f"{index}sk")
        full_after = None if after is None else prefix + after
        for position, item in self.key_range(
            tenant,
            index,
            keys,
            partition,
            bounds,
            full_after,
            flt,
            limit_hint=limit_hint,
            projection=projection,
        ):
            yield position[len(prefix) :], item

    def table_partition(
        self,
        tenant: str,
        partition: str,
        after: str | None,
        flt: Filter,
        *,
        limit_hint: int | None = None,
        from_inclusive: str | None = None,
    ) -> Iterator[tuple[str, Item]]:
        client = self.client(tenant)
        request: dict[str, Any] = {
            "TableName": self.table,
            "ConsistentRead": True,
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": expr_values(pk=partition),
            "KeyConditionExpression": "#pk = :pk",
            "Limit": self.page_limit(limit_hint),
        }
        bound = (">", after) if after is not None else (">=", from_inclusive)
        if bound[1] is not None:
            request["KeyConditionExpression"] += f" AND #sk {bound[0]} :lo"
            request["ExpressionAttributeNames"]["#sk"] = "sk"
            request["ExpressionAttributeValues"][":lo"] = attr(bound[1])
        flt.apply(request)
        for item in self.paginate(client, request):
            yield read_text(item, "sk"), item

    def partition(self, tenant: str, partition: str, *, consistent: bool) -> Iterator[Item]:
        client = self.client(tenant)
        request: dict[str, Any] = {
            "TableName": self.table,
            "ConsistentRead": consistent,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": expr_values(pk=partition),
        }
        yield from self.paginate(client, request)
