"""One construct per concern, each named for what it provides and owning the grants on it."""

from .access_logs import AccessLogs
from .bedrock_models import BedrockModels
from .content_guardrail import ContentGuardrail
from .data_key import data_key
from .declared_buckets import DeclaredBuckets
from .declared_queues import DeclaredQueues
from .dreaming_workflow import dreaming_function
from .function_set import FunctionSet
from .job_schedules import decay_job_schedule, job_schedule_group
from .job_worker import JobWorker
from .memory_api import MemoryApi
from .memory_files import MEMORY_MOUNT_PATH, MemoryFiles
from .memory_tables import MemoryTables
from .migration_workflow import MigrationWorkflow
from .network import Network
from .observability import Observability
from .service_function import ServiceFunction
from .tenant_vectors import TenantVectors
from .workflow import Workflow, declared_workflows

__all__ = [
    "MEMORY_MOUNT_PATH",
    "AccessLogs",
    "BedrockModels",
    "ContentGuardrail",
    "DeclaredBuckets",
    "DeclaredQueues",
    "FunctionSet",
    "JobWorker",
    "MemoryApi",
    "MemoryFiles",
    "MemoryTables",
    "MigrationWorkflow",
    "Network",
    "Observability",
    "ServiceFunction",
    "TenantVectors",
    "Workflow",
    "data_key",
    "decay_job_schedule",
    "declared_workflows",
    "dreaming_function",
    "job_schedule_group",
]
