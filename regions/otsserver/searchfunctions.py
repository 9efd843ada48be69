"""FUNCTIONS_SCORE_QUERY (18) over the wire: the Java and Go SDKs send it, the
Python SDK's search.proto has neither the type nor its messages.

The messages are declared here as search.proto (the Go SDK's
otsprotocol/search.proto) declares them, built at import into a private
descriptor pool; their enums are read as plain numbers (the same varints on
the wire), and the queries inside (the query, a function's filter) as bytes
that search.proto's Query then parses.  ``build`` turns one into
regions.tablestore.searchscore's FunctionsScoreQuery.
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from regions.tablestore import searchscore

__all__ = ["FUNCTIONS_SCORE_QUERY", "FunctionsScoreQuery", "build"]

FUNCTIONS_SCORE_QUERY = 18

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "regions.otsserver.functions"
# message -> [(field, number, type, label, message type)]; as search.proto
_MESSAGES = {
    "FunctionsScoreQuery": [("query", 1, _F.TYPE_BYTES, 0, None),
                            ("functions", 2, _F.TYPE_MESSAGE, 1, "Function"),
                            ("socre_mode", 3, _F.TYPE_INT32, 0, None),     # sic, as search.proto
                            ("combine_mode", 4, _F.TYPE_INT32, 0, None),
                            ("min_score", 5, _F.TYPE_FLOAT, 0, None),
                            ("max_score", 6, _F.TYPE_FLOAT, 0, None)],
    "Function": [("field_value_factor", 1, _F.TYPE_MESSAGE, 0, "FieldValueFactorFunction"),
                 ("random", 2, _F.TYPE_MESSAGE, 0, "RandomScoreFunction"),
                 ("decay", 3, _F.TYPE_MESSAGE, 0, "DecayFunction"),
                 ("weight", 4, _F.TYPE_FLOAT, 0, None),
                 ("filter", 5, _F.TYPE_BYTES, 0, None)],
    "FieldValueFactorFunction": [("field_name", 1, _F.TYPE_STRING, 0, None),
                                 ("factor", 2, _F.TYPE_FLOAT, 0, None),
                                 ("modifier", 3, _F.TYPE_INT32, 0, None),
                                 ("missing", 4, _F.TYPE_DOUBLE, 0, None)],
    "RandomScoreFunction": [],
    "DecayFunction": [("field_name", 1, _F.TYPE_STRING, 0, None),
                      ("math_function", 2, _F.TYPE_INT32, 0, None),
                      ("param_type", 3, _F.TYPE_INT32, 0, None),
                      ("param", 4, _F.TYPE_BYTES, 0, None),
                      ("decay", 5, _F.TYPE_DOUBLE, 0, None),
                      ("multi_value_mode", 6, _F.TYPE_INT32, 0, None)],
    "DateTimeValue": [("value", 1, _F.TYPE_INT32, 0, None), ("unit", 2, _F.TYPE_INT32, 0, None)],
    "DecayFuncDateParam": [("origin_long", 1, _F.TYPE_INT64, 0, None),
                           ("origin_string", 2, _F.TYPE_STRING, 0, None),
                           ("scale", 3, _F.TYPE_MESSAGE, 0, "DateTimeValue"),
                           ("offset", 4, _F.TYPE_MESSAGE, 0, "DateTimeValue")],
    "DecayFuncNumericParam": [("origin", 1, _F.TYPE_DOUBLE, 0, None),
                              ("scale", 2, _F.TYPE_DOUBLE, 0, None),
                              ("offset", 3, _F.TYPE_DOUBLE, 0, None)],
    "DecayFuncGeoParam": [("origin", 1, _F.TYPE_STRING, 0, None),
                          ("scale", 2, _F.TYPE_DOUBLE, 0, None),
                          ("offset", 3, _F.TYPE_DOUBLE, 0, None)],
}


def declare(package, messages):
    """{name: message class} of ``messages`` ({name: [(field, number, type,
    repeated, message type name or None)]}), declared in a private
    descriptor pool under ``package``: messages of the Go and Java SDKs'
    protos that the Python SDK's lack."""
    proto = descriptor_pb2.FileDescriptorProto(name=package.replace(".", "_") + ".proto",
                                               package=package, syntax="proto2")
    for name, fields in messages.items():
        m = proto.message_type.add(name=name)
        for field, number, kind, repeated, type_name in fields:
            f = m.field.add(name=field, number=number, type=kind,
                            label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = ".%s.%s" % (package, type_name)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(
        pool.FindMessageTypeByName("%s.%s" % (package, name))) for name in messages}


_CLASSES = declare(_PACKAGE, _MESSAGES)
FunctionsScoreQuery = _CLASSES["FunctionsScoreQuery"]
_PARAMS = {1: "DecayFuncDateParam", 2: "DecayFuncNumericParam", 3: "DecayFuncGeoParam"}


def _opt(p, field):
    return getattr(p, field) if p.HasField(field) else None


def build(p, depth, sub_query, parse):
    """searchscore.FunctionsScoreQuery of message ``p``; ``sub_query(bytes,
    depth)``: a query inside it; ``parse(message class, bytes, name)``: a
    message from bytes (searchwire's, with its error)."""
    functions = []
    for fn in p.functions:
        fvf = decay = None
        if fn.HasField("field_value_factor"):
            v = fn.field_value_factor
            fvf = searchscore.FieldValueFactorFunction(v.field_name, _opt(v, "factor"),
                                                       _opt(v, "modifier"), _opt(v, "missing"))
        if fn.HasField("decay"):
            decay = _decay(fn.decay, parse)
        functions.append(searchscore.ScoreFunction(
            fvf, decay, fn.HasField("random"), _opt(fn, "weight"),
            sub_query(fn.filter, depth) if fn.HasField("filter") else None))
    return searchscore.FunctionsScoreQuery(
        sub_query(p.query, depth) if p.HasField("query") else None, functions,
        _opt(p, "socre_mode"), _opt(p, "combine_mode"), _opt(p, "min_score"),
        _opt(p, "max_score"))


def _decay(d, parse):
    kind = _opt(d, "param_type")
    origin = scale = offset = None
    name = _PARAMS.get(kind)
    if name is not None and d.HasField("param"):
        param = parse(_CLASSES[name], d.param, name)
        if kind == 1:                   # a date: origin in ms or as text, DateTimeValues
            origin = (param.origin_long if param.HasField("origin_long")
                      else _opt(param, "origin_string"))
            scale, offset = (_opt(param, "scale"), _opt(param, "offset"))
        else:
            origin, scale, offset = (_opt(param, "origin"), _opt(param, "scale"),
                                     _opt(param, "offset"))
    return searchscore.DecayFunction(d.field_name, _opt(d, "math_function"), kind, origin, scale,
                                     offset, _opt(d, "decay"), _opt(d, "multi_value_mode"))
