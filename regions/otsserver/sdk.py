"""The official ``tablestore`` SDK, imported quietly.

On import, the SDK's encoder and decoder modules look for its optional native
C++ codec and, without it, log a WARNING each ("Native C++ encoder not
available, using Python implementation", and the decoder's twin; the decoder
also notes its PlainBuffer parser at INFO).  We borrow only the SDK's
protobuf messages (the endpoint) and its client (``regions-import
--endpoint``, the tests); the codec changes nothing for us, and two warnings
on every start of ``regions-server`` read like a fault.  ``quiet()`` drops
exactly those records; everything else the SDK logs still gets through.

The package's ``__init__`` calls ``quiet()``, so any ``regions.otsserver``
module imports the SDK quietly; elsewhere use ``load()``.
"""
from __future__ import annotations

import logging

from regions.extras import require

#: The loggers of tablestore/encoder.py and tablestore/decoder.py
#: (``logging.getLogger(__name__)``).  A logger's filter only sees the records
#: logged on it, not those of its children, so these and not "tablestore".
LOGGERS = ("tablestore.encoder", "tablestore.decoder")


def _not_the_native_codec_notice(record: logging.LogRecord) -> bool:
    text = record.getMessage()
    return not (text.startswith("Native ") and text.endswith("using Python implementation"))


def quiet() -> None:
    """Filter the SDK's notices that its native codec is absent (idempotent;
    must run before the SDK is imported: they are logged on import)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _not_the_native_codec_notice not in logger.filters:
            logger.addFilter(_not_the_native_codec_notice)


def load(what: str):
    """The ``tablestore`` module, imported quietly; ``regions.extras.MissingExtra``
    naming the ``server`` extra (``WHAT needs tablestore ...``) without it."""
    quiet()
    return require("tablestore", what)
