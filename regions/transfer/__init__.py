"""Import and export: ``regions-import`` and ``regions-export``.

Modules (one concept each):

- ``columns``: ``NAME:TYPE`` specs; text and JSON values as typed
  Tablestore values, within the service's limits.
- ``formats``: CSV, JSON Lines and Parquet (pyarrow) readers and writers.
- ``target``: an embedded instance or an endpoint through the official SDK.
- ``shuffle``: a uniform shuffle in bounded memory.
- ``retry``: which errors are retried (the SDK's policy) and the back-off.
- ``spread``: where the written rows went (the planner's region table).
- ``progress``: the tqdm bar (optional).
- ``importer``, ``exporter``: the two jobs; ``cli``: their command lines.

Guide: docs/workflow.md, "Import and export".
"""

from .errors import BadRow, BadValue, TransferError
from .exporter import ExportOptions, ExportResult, export_table
from .importer import ImportOptions, ImportResult, import_file
from .target import EmbeddedTarget, EndpointTarget

__all__ = ["TransferError", "BadRow", "BadValue", "ImportOptions", "ImportResult", "import_file",
           "ExportOptions", "ExportResult", "export_table", "EmbeddedTarget", "EndpointTarget"]
