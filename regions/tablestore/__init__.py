"""regions.tablestore: Alibaba Tablestore's data API over the region server.

Names follow the official Python SDK (``tablestore`` 6.4.8), so code written
for the cloud service runs against the embedded store by changing only the
client's constructor: ``OTSClient(path)`` instead of ``OTSClient(endpoint, ...)``.
Module guide: metadata (data classes), errors (exceptions and the error table),
pkcodec (order-preserving row keys), cells (cell layout), conditions (filters),
columns (wide-row column windows), capacity (CU rules), validate (limits), reads
(row assembly), transactions (local transactions), client (OTSClient).
"""
from .client import OTSClient
from .errors import OTSClientError, OTSError, OTSServiceError
from .metadata import *  # noqa: F401,F403
from .metadata import __all__ as _metadata_all

__all__ = ["OTSClient", "OTSError", "OTSClientError", "OTSServiceError"] + list(_metadata_all)
