"""One construct per concern, each named for what it provides."""

from .access_logs import AccessLogs
from .content_guardrail import ContentGuardrail
from .curator_workflow import CuratorWorkflow
from .dreaming_workflow import DreamingWorkflow
from .memory_api import MemoryApi
from .memory_files import MEMORY_MOUNT_PATH, MemoryFiles
from .memory_tables import MemoryTables
from .network import Network
from .observability import Observability
from .service_function import ServiceFunction
from .tenant_vectors import TenantVectors

__all__ = [
    "MEMORY_MOUNT_PATH",
    "AccessLogs",
    "ContentGuardrail",
    "CuratorWorkflow",
    "DreamingWorkflow",
    "MemoryApi",
    "MemoryFiles",
    "MemoryTables",
    "Network",
    "Observability",
    "ServiceFunction",
    "TenantVectors",
]
