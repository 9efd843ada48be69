"""Split algorithms: N-1 sorted, unique split points for N regions.

Why: a table pre-split on points that match its keys starts with every
region taking writes; points that miss the keys leave regions empty and pile
writes on the rest (HBASE-7223). Each algorithm here knows one keyspace and
does two things with it (the contract of ``SplitAlgorithm``):

- ``split(n)``: the points, typed as the Tablestore layer takes them (``str``
  for STRING partition keys, ``bytes`` for BINARY, ``int`` for INTEGER). The
  raw region layer takes bytes: ``encode_points`` converts.
- ``key_for(i)``: the key with index ``i`` in the keyspace (modulo its size),
  so the evaluator's workloads (uniform, sequential, timestamps, zipf) can
  draw keys shaped like the ones the algorithm expects.

Compared with HBase's ``RegionSplitter``: HexStringSplit puts every
remainder in the last region; here point i is ``floor(i * size / n)`` so the
regions differ by at most one key value. ``bytes_split`` is HBase's
``Bytes.split`` (linear base-256 interpolation between two padded keys) and
warns when its endpoints look like text over a small alphabet.

Instances are immutable after construction and thread-safe.
"""

from __future__ import annotations

import bisect
import string
import warnings

from .. import keys as keydesign
from .errors import PresplitError

__all__ = [
    "SmallAlphabetWarning", "SplitAlgorithm", "AlphabetSplit", "HexSplit",
    "DecimalSplit", "UniformSplit", "IntegerSplit", "HashPrefixSplit",
    "SaltSplit", "SampleSplit", "ExplicitSplit", "InterpolateSplit",
    "bytes_split", "check_points", "encode_point", "encode_points",
]

HEX_LOWER = "0123456789abcdef"
HEX_UPPER = "0123456789ABCDEF"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class SmallAlphabetWarning(UserWarning):
    """Byte interpolation between keys that only use a few byte values."""


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise PresplitError(f"number of regions must be an int, got {n!r}")
    if n < 1:
        raise PresplitError(f"number of regions must be at least 1, got {n}")
    return n


def _key_type(value) -> str:
    if isinstance(value, bool):
        raise PresplitError(f"split point {value!r} is a bool, not a key")
    for t in (str, bytes, int):
        if isinstance(value, t):
            return t.__name__
    raise PresplitError(f"split point {value!r} must be str, bytes or int")


def check_points(points) -> list:
    """Validate split points: one type, no empty key, strictly increasing.

    Returns them as a list. The region layer rejects the same things; this
    check runs first so the planner never proposes what cannot be created.
    """
    points = list(points)
    if not points:
        return points
    kinds = {_key_type(p) for p in points}
    if len(kinds) > 1:
        raise PresplitError(f"split points mix types: {', '.join(sorted(kinds))}")
    for i, p in enumerate(points):
        if isinstance(p, (str, bytes)) and not p:
            raise PresplitError(f"split point {i} is empty (the empty key is the table's start)")
        if i and not points[i - 1] < p:
            what = "duplicate" if points[i - 1] == p else "unsorted"
            raise PresplitError(f"split points are {what} at {i}: {points[i - 1]!r} then {p!r}")
    return points


def encode_point(point) -> bytes:
    """Order-preserving bytes of one typed point, for the raw region layer.

    str -> UTF-8 (code-point order equals UTF-8 byte order); bytes as is;
    int -> 8 bytes big-endian with the sign bit flipped, so negative numbers
    sort first. Tablestore tables use the Tablestore layer's own primary-key
    codec instead; pass them the typed points.
    """
    kind = _key_type(point)
    if kind == "str":
        return point.encode("utf-8")
    if kind == "bytes":
        return bytes(point)
    if not INT64_MIN <= point <= INT64_MAX:
        raise PresplitError(f"integer split point {point} does not fit in 64 bits")
    return (point - INT64_MIN).to_bytes(8, "big")


def encode_points(points) -> list[bytes]:
    """``encode_point`` over validated points; the result stays sorted."""
    return [encode_point(p) for p in check_points(points)]


class SplitAlgorithm:
    """A keyspace that can be cut into N regions. Subclasses set ``name``."""

    name = "abstract"
    key_type = "str"

    def split(self, n: int) -> list:
        raise NotImplementedError

    def key_for(self, i: int):
        raise PresplitError(f"the {self.name} algorithm has no keyspace to draw keys from; "
                            "evaluate it with a sample or a key file")

    def random_key(self, rng):
        """A uniformly random key of the keyspace (``rng``: random.Random)."""
        return self.key_for(rng.getrandbits(64))

    def describe(self) -> str:
        return self.name


class _RadixSplit(SplitAlgorithm):
    """Fixed-width keys over ``size`` evenly spaced values (shared by the
    alphabet and uniform-bytes algorithms)."""

    size = 1

    def _render(self, v: int):
        raise NotImplementedError

    def split(self, n: int) -> list:
        _check_n(n)
        if n > self.size:
            raise PresplitError(f"{self.describe()} has only {self.size} distinct keys: "
                                f"too short for {n} regions (use longer keys)")
        return [self._render(i * self.size // n) for i in range(1, n)]

    def key_for(self, i: int):
        return self._render(i % self.size)

    def random_key(self, rng):
        return self._render(rng.randrange(self.size))


class AlphabetSplit(_RadixSplit):
    """Keys of ``length`` characters from ``alphabet`` (sorted, deduplicated).

    Base36, ``[0-9A-Za-z]``, or anything whose characters are known: each
    region gets the same share of the ``len(alphabet) ** length`` keys.
    """

    name = "alphabet"

    def __init__(self, alphabet: str, length: int = 8):
        if not isinstance(alphabet, str) or not alphabet:
            raise PresplitError("alphabet is empty: give the characters keys can hold")
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise PresplitError(f"key length must be a positive int, got {length!r}")
        self.alphabet = "".join(sorted(set(alphabet)))
        self.length = length
        self.size = len(self.alphabet) ** length

    def _render(self, v: int) -> str:
        k, out = len(self.alphabet), []
        for _ in range(self.length):
            v, d = divmod(v, k)
            out.append(self.alphabet[d])
        return "".join(reversed(out))

    def describe(self) -> str:
        return f"{self.name} over {self.alphabet!r}, length {self.length}"


class HexSplit(AlphabetSplit):
    """HBase's HexStringSplit: ``[0-9a-f]`` strings (``upper`` for A-F)."""

    name = "hex"

    def __init__(self, length: int = 8, upper: bool = False):
        super().__init__(HEX_UPPER if upper else HEX_LOWER, length)


class DecimalSplit(AlphabetSplit):
    """HBase's DecimalStringSplit: zero-padded decimal strings."""

    name = "decimal"

    def __init__(self, length: int = 8):
        super().__init__(string.digits, length)


class UniformSplit(_RadixSplit):
    """HBase's UniformSplit: raw byte keys, evenly over ``256 ** length``."""

    name = "uniform"
    key_type = "bytes"

    def __init__(self, length: int = 8):
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise PresplitError(f"key length must be a positive int, got {length!r}")
        self.length = length
        self.size = 256 ** length

    def _render(self, v: int) -> bytes:
        return v.to_bytes(self.length, "big")

    def describe(self) -> str:
        return f"uniform bytes, length {self.length}"


class IntegerSplit(SplitAlgorithm):
    """An INTEGER partition key in ``[low, high]`` (both inclusive)."""

    name = "integer"
    key_type = "int"

    def __init__(self, low: int = 0, high: int = INT64_MAX):
        for v in (low, high):
            if isinstance(v, bool) or not isinstance(v, int):
                raise PresplitError(f"integer range bounds must be ints, got {v!r}")
        if high < low:
            raise PresplitError(f"integer range is empty: high {high} < low {low}")
        self.low, self.high = low, high
        self.span = high - low + 1

    def split(self, n: int) -> list[int]:
        _check_n(n)
        if n > self.span:
            raise PresplitError(f"range [{self.low}, {self.high}] has only {self.span} values: "
                                f"too few for {n} regions")
        return [self.low + i * self.span // n for i in range(1, n)]

    def key_for(self, i: int) -> int:
        return self.low + i % self.span

    def random_key(self, rng) -> int:
        return self.low + rng.randrange(self.span)

    def describe(self) -> str:
        return f"integer in [{self.low}, {self.high}]"


class HashPrefixSplit(HexSplit):
    """N buckets over the first ``width`` hex digits of a hash prefix.

    Keys are ``keys.hash_prefix(id, width, algo)``: the points are
    ``width``-digit hex strings, and every key with that prefix sorts after
    its point, so each region holds whole prefix buckets.
    """

    name = "hash-prefix"

    def __init__(self, width: int = 4, algo: str = "md5", sep: str = ""):
        if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= 32:
            raise PresplitError(f"hash prefix width must be 1..32 hex digits, got {width!r}")
        super().__init__(width)
        keydesign.hash_digest("", algo)  # validates algo, raising KeyDesignError
        self.algo, self.sep = algo, sep

    def key_for(self, i: int) -> str:
        return keydesign.hash_prefix(i, self.length, self.algo, self.sep)

    def random_key(self, rng) -> str:
        # A whole key (prefix + id) of a random id, not a bare prefix.
        return self.key_for(rng.getrandbits(64))

    def describe(self) -> str:
        return f"hash prefix ({self.algo}, {self.length} hex digits)"


class SaltSplit(SplitAlgorithm):
    """Keys salted with one of ``buckets`` zero-padded salts (``keys.salt``).

    With ``n == buckets`` each region is one salt; with fewer regions the
    salts are grouped evenly. More regions than salts cannot help: a salt's
    keys are unbounded within it.
    """

    name = "salt"

    def __init__(self, buckets: int = 16, sep: str = ""):
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
            raise PresplitError(f"salt buckets must be a positive int, got {buckets!r}")
        self.buckets, self.sep = buckets, sep
        self.width = keydesign.salt_width(buckets)

    def split(self, n: int) -> list[str]:
        _check_n(n)
        if n > self.buckets:
            raise PresplitError(f"{self.buckets} salt buckets cannot fill {n} regions")
        return [f"{i * self.buckets // n:0{self.width}d}" for i in range(1, n)]

    def key_for(self, i: int) -> str:
        return keydesign.salt(i, self.buckets, self.sep)

    def describe(self) -> str:
        return f"salt over {self.buckets} buckets"


class SampleSplit(SplitAlgorithm):
    """Quantiles of real keys: equal key counts (or equal bytes) per region.

    ``weights`` (optional, one per key) are the bytes each key stands for;
    ``by="bytes"`` balances them instead of counts. A split point is always
    a key of the sample, and equal keys never straddle a point, so a hot key
    may leave its region bigger than the rest (the advisor reports it).
    """

    name = "sample"

    def __init__(self, keys, weights=None, by: str = "count"):
        keys = list(keys)
        if not keys:
            raise PresplitError("the key sample is empty")
        kinds = {_key_type(k) for k in keys}
        if len(kinds) > 1:
            raise PresplitError(f"the key sample mixes types: {', '.join(sorted(kinds))}")
        if by not in ("count", "bytes"):
            raise PresplitError(f"sample weighting must be 'count' or 'bytes', got {by!r}")
        if weights is None:
            weights = [len(encode_point(k)) for k in keys] if by == "bytes" else [1] * len(keys)
        weights = list(weights)
        if len(weights) != len(keys) or any(w < 0 for w in weights):
            raise PresplitError("sample weights must be one non-negative number per key")
        if by == "count":
            weights = [1] * len(keys)
        self.key_type = kinds.pop()
        self.keys, self.by = keys, by
        totals: dict = {}
        for k, w in zip(keys, weights):
            totals[k] = totals.get(k, 0) + w
        self.distinct = sorted(totals)
        cum, run = [], 0
        for k in self.distinct:
            cum.append(run)  # weight strictly below key k
            run += totals[k]
        self._below, self.total = cum, run

    def split(self, n: int) -> list:
        _check_n(n)
        m = len(self.distinct)
        if n > m:
            raise PresplitError(f"the sample has {m} distinct keys: too few for {n} regions")
        points, prev = [], 0
        for i in range(1, n):
            k = bisect.bisect_left(self._below, i * self.total / n)
            k = min(max(k, prev + 1), m - (n - i))  # keep room for the points still to come
            points.append(self.distinct[k])
            prev = k
        return points

    def key_for(self, i: int):
        return self.distinct[i % len(self.distinct)]

    def random_key(self, rng):
        return rng.choice(self.keys)  # as often as the sample holds it

    def describe(self) -> str:
        return f"sample of {len(self.keys)} keys, equal {self.by}"


class ExplicitSplit(SplitAlgorithm):
    """Given points (a list or an HBase SPLITS file); ``n`` must match."""

    name = "explicit"

    def __init__(self, points):
        self.points = check_points(points)
        if not self.points:
            raise PresplitError("no explicit split points given")
        self.key_type = _key_type(self.points[0])

    def split(self, n: int | None = None) -> list:
        if n is not None and _check_n(n) != len(self.points) + 1:
            raise PresplitError(f"{len(self.points)} explicit points make "
                                f"{len(self.points) + 1} regions, not {n}")
        return list(self.points)

    def describe(self) -> str:
        return f"{len(self.points)} explicit points"


class InterpolateSplit(SplitAlgorithm):
    """N regions between two byte keys by ``bytes_split`` (HBase's
    ``createTable(desc, start, end, n)`` without the two catch-all regions)."""

    name = "interpolate"
    key_type = "bytes"

    def __init__(self, start: bytes, end: bytes):
        self.start, self.end = bytes(start), bytes(end)

    def split(self, n: int) -> list[bytes]:
        _check_n(n)
        if n == 1:
            return []
        return bytes_split(self.start, self.end, n - 1)[1:-1]

    def describe(self) -> str:
        return f"byte interpolation from {self.start!r} to {self.end!r}"


def _small_alphabet_hint(a: bytes, b: bytes) -> str | None:
    chars = set((a + b).decode("latin-1"))
    if not chars or not all(" " <= c <= "~" for c in chars):
        return None
    if chars <= set(HEX_LOWER) or chars <= set(HEX_UPPER):
        return "the keys look like hex strings: use the hex algorithm"
    if chars <= set(string.digits):
        return "the keys look like decimal strings: use the decimal algorithm"
    return "the keys look like printable text: use the alphabet or sample algorithm"


def bytes_split(a: bytes, b: bytes, num: int, inclusive: bool = False) -> list[bytes]:
    """HBase ``Bytes.split``: ``num + 2`` keys from ``a`` to ``b`` inclusive.

    Both keys are right-padded with zero bytes to one length and read as
    base-256 numbers; the ``num`` inner keys are evenly spaced between them
    (an extra zero byte is appended while the keys are too close). Warns
    ``SmallAlphabetWarning`` when the keys look like text: most of the
    interpolated points then fall on byte values that never occur.
    """
    if not isinstance(a, bytes) or not isinstance(b, bytes):
        raise PresplitError("bytes_split needs two bytes keys")
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise PresplitError(f"bytes_split needs at least one inner key, got {num!r}")
    width = max(len(a), len(b))
    pa, pb = a.ljust(width, b"\0"), b.ljust(width, b"\0")
    if not pa < pb:
        raise PresplitError(f"bytes_split needs start < end, got {a!r} >= {b!r}")
    hint = _small_alphabet_hint(a, b)
    if hint:
        warnings.warn(SmallAlphabetWarning(
            f"byte interpolation between {a!r} and {b!r} spreads points over all 256 "
            f"byte values; {hint}"), stacklevel=2)
    while True:
        lo, hi = int.from_bytes(pa, "big"), int.from_bytes(pb, "big")
        diff = hi - lo + (1 if inclusive else 0)
        if diff >= num + 1:
            break
        pa, pb, width = pa + b"\0", pb + b"\0", width + 1
    step = diff // (num + 1)
    inner = [(lo + step * i).to_bytes(width, "big") for i in range(1, num + 1)]
    return [a] + inner + [b]
