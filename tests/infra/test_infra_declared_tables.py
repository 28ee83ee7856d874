"""Every table agent_memory.settings.resources declares is deployed from its declaration, without a construct
or stack line of its own: the table, its name in the environment of the functions that touch data, and each
declared access granted to exactly the functions it names (IAM on the table and, in the VPC, the DynamoDB
endpoint's statement)."""

from __future__ import annotations

from collections import defaultdict

from infra_support import Synthesized, actions_of, as_list, functions_by_module, policy_statements

from agent_memory.settings.resources import TABLES


def test_each_declared_table_is_deployed_and_named_to_the_data_functions(synthesized: Synthesized) -> None:
    functions = functions_by_module(synthesized)
    for table in TABLES:
        logical_id = synthesized.logical_id("AWS::DynamoDB::Table", f"Tables{table.construct_id}")
        properties = synthesized.resources[logical_id]["Properties"]
        assert properties["KeySchema"] == [{"AttributeName": table.partition_key, "KeyType": "HASH"}]
        ttl = properties.get("TimeToLiveSpecification", {}).get("AttributeName")
        assert ttl == table.time_to_live, table.construct_id
        for module in ("api", "authorizer", "dreaming", "job_worker"):
            assert functions[module][1][table.variable] == {"Ref": logical_id}, (module, table.variable)
        assert table.variable not in functions["console"][1]  # no data, no table names


def test_each_declared_access_is_granted_to_exactly_the_functions_it_names(
    profile_synthesized: Synthesized,
) -> None:
    synthesized = profile_synthesized
    functions = functions_by_module(synthesized)
    for table in TABLES:
        logical_id = synthesized.logical_id("AWS::DynamoDB::Table", f"Tables{table.construct_id}")
        declared: dict[str, set[str]] = defaultdict(set)
        for access in table.access:
            for module in access.functions:
                declared[module] |= set(access.actions)
        for module, (role, _) in functions.items():
            on_table = [
                s
                for s in policy_statements(synthesized, role)
                if f"<{logical_id}.Arn>" in as_list(s["Resource"])
            ]
            assert actions_of(on_table) == declared.get(module, set()), (module, table.construct_id)
