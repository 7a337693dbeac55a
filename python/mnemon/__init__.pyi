"""mnemon: an embedded long-term memory engine for LLM agents, in process.

Type stub of the package: the names below are defined in typed modules of
the package (`_engine`, `_errors`, `_namespace`, `_record`, `_types`), so
editors and mypy see every signature and result type.
"""

from typing import Any, Dict, List

from ._embedder import EmbedFunc as EmbedFunc
from ._engine import AsOf as AsOf
from ._engine import Engine as Engine
from ._engine import TimeRange as TimeRange
from ._engine import View as View
from ._errors import CancelledError as CancelledError
from ._errors import ClosedError as ClosedError
from ._errors import ConflictError as ConflictError
from ._errors import CorruptedError as CorruptedError
from ._errors import EmbedderError as EmbedderError
from ._errors import FencedError as FencedError
from ._errors import IncompatibleFormatError as IncompatibleFormatError
from ._errors import InternalError as InternalError
from ._errors import InvalidInputError as InvalidInputError
from ._errors import IoError as IoError
from ._errors import LockedError as LockedError
from ._errors import MnemonError as MnemonError
from ._errors import NamespaceNotAllowedError as NamespaceNotAllowedError
from ._errors import NotFoundError as NotFoundError
from ._errors import PoisonedError as PoisonedError
from ._errors import RejectedError as RejectedError
from ._errors import ResponseTooLargeError as ResponseTooLargeError
from ._errors import StorageError as StorageError
from ._errors import UnauthorizedError as UnauthorizedError
from ._errors import KeyRequiredError as KeyRequiredError
from ._errors import WrongKeyError as WrongKeyError
from ._errors import UnavailableError as UnavailableError
from ._namespace import Namespace as Namespace
from ._record import Record as Record
from ._types import *  # noqa: F403

__version__: str
DEFAULT_MAX_RESPONSE_TOKENS: int
DEFAULT_MAX_CONTENT_BYTES: int
__all__ = [
    "Engine",
    "View",
    "AsOf",
    "TimeRange",
    "EmbedFunc",
    "Namespace",
    "Record",
    "MnemonError",
    "InvalidInputError",
    "NotFoundError",
    "ConflictError",
    "RejectedError",
    "NamespaceNotAllowedError",
    "ResponseTooLargeError",
    "LockedError",
    "UnavailableError",
    "ClosedError",
    "CancelledError",
    "FencedError",
    "PoisonedError",
    "CorruptedError",
    "IncompatibleFormatError",
    "EmbedderError",
    "IoError",
    "StorageError",
    "InternalError",
    "UnauthorizedError",
    "KeyRequiredError",
    "WrongKeyError",
    "DEFAULT_MAX_RESPONSE_TOKENS",
    "DEFAULT_MAX_CONTENT_BYTES",
    "schemas",
    # Result types (written by tools/gen_types.py):
    # BEGIN GENERATED
    "ArchiveReason",
    "BlockPart",
    "DedupMode",
    "EmbedMode",
    "EntryFate",
    "Grounds",
    "ImportFormat",
    "Lang",
    "OnError",
    "PatternKind",
    "RecallMode",
    "Role",
    "Section",
    "SimilarityNorm",
    "Status",
    "SupersedeReason",
    "Tier",
    "Abstain",
    "Abstention",
    "BackupReport",
    "BlockEntry",
    "CheckReport",
    "ClusterView",
    "CompactionFigures",
    "CompactionReceipt",
    "Consolidation",
    "ContextBlock",
    "ErasureReceipt",
    "Event",
    "EventCounts",
    "Explanation",
    "ExportHeader",
    "ExportReport",
    "ExtractionPromptResponse",
    "ExtractionReport",
    "ForgetResponse",
    "ForgetUserResponse",
    "HistoryResponse",
    "Hit",
    "ImportSummary",
    "ItemOutcome",
    "ListResponse",
    "LogResponse",
    "MaintenanceReport",
    "Memory",
    "NamespaceForgotten",
    "NamespaceMaintenance",
    "NamespaceSummary",
    "NamespacesResponse",
    "Observation",
    "ObserveResponse",
    "PatternMatch",
    "QueryTime",
    "RecallResponse",
    "ReceiptsResponse",
    "Rejection",
    "Remembered",
    "RestoreReport",
    "ScanSummary",
    "ScannedFile",
    "ServedNamespace",
    "SessionEnd",
    "ShredCheck",
    "ShredReport",
    "Stats",
    "TimeSpan",
    "Timeline",
    "TimelineBucket",
    "Unmapped",
    "RESPONSES",
    # END GENERATED
]

def schemas() -> List[Dict[str, Any]]: ...
