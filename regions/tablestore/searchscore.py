"""FunctionsScoreQuery: a query's score reshaped by functions of each row's
values (the Java and Go SDKs' FUNCTIONS_SCORE_QUERY, 18; Elasticsearch's
``function_score``, whose semantics the service's names follow).

Each function applies to the rows its ``filter`` matches (every row without
one) and gives a value times its ``weight`` (1 unless given):

- ``field_value_factor``: ``modifier(factor * value)`` of a numeric field's
  first value (``missing`` when the row has none; without ``missing`` the
  function does not apply to that row); modifiers as Elasticsearch's
  (log is base 10, ln natural, log1p = log10(1 + v), ...).
- ``decay``: 1 at ``origin``, falling with the distance past ``offset``:
  GAUSS ``exp(-d^2 / 2s^2)``, EXP ``exp(ln(decay) d / scale)``, LINEAR
  ``max(0, (S - d) / S)``, each worth ``decay`` at ``scale`` past the
  offset; the distance of a number, of a date (ms; the scale and offset are
  DateTimeValues) or of a geo point (metres); a row of several values takes
  the min (default), max, sum or avg of their distances (``multi_value_mode``).
- ``random``: a value in [0, 1).
- ``weight`` alone: the weight.

``score_mode`` joins the values of the functions that apply (MULTIPLY by
default; AVG is weighted by the weights; FIRST takes the first function
that applies); no function applying gives 1. ``max_score`` caps that;
``combine_mode`` joins it with the query's score (MULTIPLY by default;
REPLACE keeps the functions' alone); rows scoring under ``min_score`` are
left out.
"""
import math
import random

from .errors import service_error

__all__ = ["FunctionsScoreQuery", "ScoreFunction", "DecayFunction", "FieldValueFactorFunction",
           "score"]

_DAY_MS = 86_400_000
# DateTimeUnit -> ms (a month and a year by their mean length: a decay's
# scale is a distance, not a calendar step)
_UNIT_MS = {"YEAR": 31_556_952_000, "QUARTER_YEAR": 7_889_238_000, "MONTH": 2_629_746_000,
            "WEEK": 7 * _DAY_MS, "DAY": _DAY_MS, "HOUR": 3_600_000, "MINUTE": 60_000,
            "SECOND": 1000, "MILLISECOND": 1}
_UNITS = {1: "YEAR", 2: "QUARTER_YEAR", 3: "MONTH", 4: "WEEK", 5: "DAY", 6: "HOUR",
          7: "MINUTE", 8: "SECOND", 9: "MILLISECOND"}
MODIFIERS = {1: "NONE", 2: "LOG", 3: "LOG1P", 4: "LOG2P", 5: "LN", 6: "LN1P", 7: "LN2P",
             8: "SQUARE", 9: "SQRT", 10: "RECIPROCAL"}
MATH_FUNCTIONS = {1: "GAUSS", 2: "EXP", 3: "LINEAR"}
PARAM_TYPES = {1: "DATE", 2: "NUMERIC", 3: "GEO"}
MULTI_VALUE_MODES = {1: "MAX", 2: "MIN", 3: "SUM", 4: "AVG"}
SCORE_MODES = {1: "AVG", 2: "MAX", 3: "SUM", 4: "MIN", 5: "MULTIPLY", 6: "FIRST"}
COMBINE_MODES = {1: "MULTIPLY", 2: "AVG", 3: "MAX", 4: "SUM", 5: "MIN", 6: "REPLACE"}

_MODIFY = {
    "NONE": lambda v: v, "LOG": math.log10, "LOG1P": lambda v: math.log10(1 + v),
    "LOG2P": lambda v: math.log10(2 + v), "LN": math.log, "LN1P": math.log1p,
    "LN2P": lambda v: math.log(2 + v), "SQUARE": lambda v: v * v, "SQRT": math.sqrt,
    "RECIPROCAL": lambda v: 1 / v,
}


class FieldValueFactorFunction:
    def __init__(self, field_name, factor=None, modifier=None, missing=None):
        self.field_name, self.factor = field_name, factor
        self.modifier, self.missing = modifier, missing


class DecayFunction:
    """``origin``/``scale``/``offset``: numbers (NUMERIC), a "lat,lon" text
    and metres (GEO), or ms / a date text and (value, unit) pairs (DATE)."""

    def __init__(self, field_name, math_function="GAUSS", param_type="NUMERIC", origin=None,
                 scale=None, offset=None, decay=None, multi_value_mode=None):
        self.field_name, self.math_function, self.param_type = field_name, math_function, param_type
        self.origin, self.scale, self.offset = origin, scale, offset
        self.decay, self.multi_value_mode = decay, multi_value_mode


class ScoreFunction:
    def __init__(self, field_value_factor=None, decay=None, random=False, weight=None,
                 filter=None):
        self.field_value_factor, self.decay, self.random = field_value_factor, decay, random
        self.weight, self.filter = weight, filter


class FunctionsScoreQuery:
    def __init__(self, query=None, functions=(), score_mode=None, combine_mode=None,
                 min_score=None, max_score=None):
        self.query, self.functions = query, list(functions)
        self.score_mode, self.combine_mode = score_mode, combine_mode
        self.min_score, self.max_score = min_score, max_score


def _invalid(text):
    return service_error("search_function_score", detail=text)


def check(q):
    """Refuse what no row can be scored by (before any row is read)."""
    if q.query is None:
        raise _invalid("FunctionsScoreQuery needs a query.")
    if not q.functions:
        raise _invalid("FunctionsScoreQuery needs at least one function.")
    for fn in q.functions:
        kinds = [fn.field_value_factor is not None, fn.decay is not None, bool(fn.random)]
        if sum(kinds) > 1:
            raise _invalid("A score function has one of field_value_factor, decay or random.")
        if sum(kinds) == 0 and fn.weight is None:
            raise _invalid("A score function without a function needs a weight.")
        v = fn.field_value_factor
        if v is not None and _name(v.modifier, MODIFIERS) is False:
            raise _invalid("Unknown modifier: %r." % (v.modifier,))
        d = fn.decay
        if d is not None:
            for name, table in (("math_function", MATH_FUNCTIONS), ("param_type", PARAM_TYPES),
                                ("multi_value_mode", MULTI_VALUE_MODES)):
                if _name(getattr(d, name), table) is False:
                    raise _invalid("Unknown %s of a decay function: %r."
                                   % (name, getattr(d, name)))
            if d.scale is None or _distance_scale(d) <= 0:
                raise _invalid("A decay function's scale must be positive.")
            if d.decay is not None and not 0 < d.decay < 1:
                raise _invalid("A decay function's decay must be in (0, 1).")
    for name, table in (("score_mode", SCORE_MODES), ("combine_mode", COMBINE_MODES)):
        if _name(getattr(q, name), table) is False:
            raise _invalid("Unknown %s: %r." % (name, getattr(q, name)))


def _name(value, table):
    """An enum given by number or name as its name (None: absent; False: unknown)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.upper() if value.upper() in table.values() else False
    return table.get(int(value), False)


def _ms(value):
    """A DateTimeValue (value, unit) or a number of ms as ms."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    unit = _name(getattr(value, "unit", None), _UNITS)
    if not unit:
        raise _invalid("A decay function's date scale or offset without a unit.")
    return float(getattr(value, "value", 0) or 0) * _UNIT_MS[unit]


def _distance_scale(d):
    return _ms(d.scale) if _name(d.param_type, PARAM_TYPES) == "DATE" else float(d.scale)


def score(q, base, filtered, values_of, date_ms, point, distance):
    """The score of a row whose query scored ``base`` (None: the row is
    left out by ``min_score``).  ``filtered[i]``: whether function i's
    filter matches the row; ``values_of(field_name)``: the row's values of
    a field (numbers, ms, or (lat, lon) pairs); ``date_ms(field_name,
    text)`` and ``point(text)`` parse a decay's origin, ``distance(lat, lon, lat, lon)``
    is in metres."""
    parts = []                           # (value times weight, weight) of those that apply
    for fn, passes in zip(q.functions, filtered):
        if not passes:
            continue
        weight = 1.0 if fn.weight is None else float(fn.weight)
        if fn.field_value_factor is not None:
            v = _factor(fn.field_value_factor, values_of)
        elif fn.decay is not None:
            v = _decay(fn.decay, values_of, date_ms, point, distance)
        elif fn.random:
            v = random.random()
        else:
            v = 1.0
        if v is None:
            continue
        parts.append((v * weight, weight))
    mode = _name(q.score_mode, SCORE_MODES) or "MULTIPLY"
    if not parts:
        f = 1.0
    elif mode == "FIRST":
        f = parts[0][0]
    elif mode == "AVG":
        total = sum(w for _, w in parts)
        f = sum(v for v, _ in parts) / total if total else 0.0
    elif mode == "MAX":
        f = max(v for v, _ in parts)
    elif mode == "MIN":
        f = min(v for v, _ in parts)
    elif mode == "SUM":
        f = sum(v for v, _ in parts)
    else:
        f = math.prod(v for v, _ in parts)
    if q.max_score is not None:
        f = min(f, float(q.max_score))
    combine = _name(q.combine_mode, COMBINE_MODES) or "MULTIPLY"
    final = {"MULTIPLY": base * f, "AVG": (base + f) / 2, "MAX": max(base, f),
             "SUM": base + f, "MIN": min(base, f), "REPLACE": f}[combine]
    if q.min_score is not None and final < float(q.min_score):
        return None
    return final


def _factor(fvf, values_of):
    values = values_of(fvf.field_name)
    if values:
        value = float(values[0])
    elif fvf.missing is not None:
        value = float(fvf.missing)
    else:
        return None
    v = (1.0 if fvf.factor is None else float(fvf.factor)) * value
    try:
        out = _MODIFY[_name(fvf.modifier, MODIFIERS) or "NONE"](v)
    except (ValueError, ZeroDivisionError):
        raise _invalid("field_value_factor of %s gives no number for %r."
                       % (fvf.field_name, value)) from None
    return out


def _decay(d, values_of, date_ms, point, distance):
    values = values_of(d.field_name)
    if not values:
        return None
    kind = _name(d.param_type, PARAM_TYPES) or "NUMERIC"
    if kind == "GEO":
        lat, lon = point(d.origin)
        distances = [distance(lat, lon, a, b) for a, b in values]
        scale, offset = float(d.scale), float(d.offset or 0)
    elif kind == "DATE":
        origin = d.origin if isinstance(d.origin, (int, float)) else date_ms(d.field_name,
                                                                              d.origin)
        if origin is None:
            raise _invalid("The decay's origin %r is not a date of %s." % (d.origin, d.field_name))
        distances = [abs(float(v) - origin) for v in values]
        scale, offset = _ms(d.scale), _ms(d.offset)
    else:
        distances = [abs(float(v) - float(d.origin or 0)) for v in values]
        scale, offset = float(d.scale), float(d.offset or 0)
    mode = _name(d.multi_value_mode, MULTI_VALUE_MODES) or "MIN"
    dist = {"MIN": min, "MAX": max, "SUM": sum,
            "AVG": lambda xs: sum(xs) / len(xs)}[mode](distances)
    dist = max(0.0, dist - offset)
    decay = 0.5 if d.decay is None else float(d.decay)
    fn = _name(d.math_function, MATH_FUNCTIONS) or "GAUSS"
    if fn == "GAUSS":
        sigma2 = -scale * scale / (2 * math.log(decay))
        return math.exp(-dist * dist / (2 * sigma2))
    if fn == "EXP":
        return math.exp(math.log(decay) / scale * dist)
    s = scale / (1 - decay)
    return max(0.0, (s - dist) / s)
