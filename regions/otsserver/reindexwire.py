"""A search index's dynamic schema change over the wire: the fields of the
Go and Java SDKs' search.proto that the Python SDK's lacks.

CreateSearchIndexRequest's ``source_index_name`` (4), UpdateSearchIndexRequest's
``switch_index_name`` (3) and ``query_flow_weight`` (4), and
DescribeSearchIndexResponse's ``brother_index_name`` (4) and
``query_flow_weight`` (5), each a QueryFlowWeight (``index_name``,
``weight``).  A request is parsed again by a message of these fields alone
(the others are unknown to it, as these are to the SDK's); a response gains
them as the serialised bytes of such a message after the SDK's (protobuf
merges concatenated messages).
"""
from google.protobuf.descriptor_pb2 import FieldDescriptorProto as _F

from regions.otsserver import convert as cv
from regions.otsserver.searchfunctions import declare

__all__ = ["source_index", "reindex_update", "Described"]

_S, _I, _M = _F.TYPE_STRING, _F.TYPE_INT32, _F.TYPE_MESSAGE
_CLASSES = declare("regions.otsserver.reindex", {
    "QueryFlowWeight": [("index_name", 1, _S, 0, None), ("weight", 2, _I, 0, None)],
    "CreateExtra": [("source_index_name", 4, _S, 0, None)],
    "UpdateExtra": [("switch_index_name", 3, _S, 0, None),
                    ("query_flow_weight", 4, _M, 1, "QueryFlowWeight")],
    "DescribeExtra": [("brother_index_name", 4, _S, 0, None),
                      ("query_flow_weight", 5, _M, 1, "QueryFlowWeight")],
})


def source_index(body):
    """CreateSearchIndexRequest ``body``'s source_index_name, or None."""
    extra = cv.parse(_CLASSES["CreateExtra"], body)
    return extra.source_index_name if extra.HasField("source_index_name") else None


def reindex_update(body):
    """(switch_index_name or None, [(index name, weight)] or None) of an
    UpdateSearchIndexRequest ``body``."""
    extra = cv.parse(_CLASSES["UpdateExtra"], body)
    switch = extra.switch_index_name if extra.HasField("switch_index_name") else None
    weights = [(w.index_name, w.weight) for w in extra.query_flow_weight] or None
    return switch, weights


class Described:
    """A DescribeSearchIndexResponse with the index's brother and weights."""

    def __init__(self, response, brother, weights):
        self.response = response
        self.extra = _CLASSES["DescribeExtra"]()
        if brother is not None:
            self.extra.brother_index_name = brother
        for name, weight in weights:
            self.extra.query_flow_weight.add(index_name=name, weight=weight)

    def SerializeToString(self):
        return self.response.SerializeToString() + self.extra.SerializeToString()
