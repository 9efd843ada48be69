"""Tablestore request authentication and response signing, as the SDK computes them.

Request (what the server verifies)::

    headers_string = "\\n".join(sorted("%s:%s" % (name.lower(), value.strip())
                                       for every header named x-ots-*
                                       except the signature headers))
    canonical      = "/" + Api + "\\nPOST\\n" + "" + "\\n" + headers_string + "\\n"
    V2: x-ots-signature   = b64(HMAC-SHA1(secret, canonical))
    V4: x-ots-signaturev4 = b64(HMAC-SHA256(v4_key, canonical + "ots")), where
        v4_key = b64(H(H(H(H("aliyun_v4" + secret, signdate), region), "ots"),
                       "aliyun_v4_request")), H = HMAC-SHA256, and the base64
        text itself is the key; signdate and region come from the request's
        x-ots-signdate and x-ots-signregion headers (signed too).

Response (what the SDK verifies)::

    authorization = "OTS " + AccessKeyId + ":" +
                    b64(HMAC-SHA1(signing_key, headers_string(response) + "\\n/" + Api))

with signing_key the secret (V2) or the V4 key of the request (V4).

The URI signed is always "/" + Api, whatever path prefix the endpoint has.

Thread-safety: an ``Authenticator`` is immutable after construction.
"""
from __future__ import annotations

import base64
import calendar
import datetime
import hashlib
import hmac
import re
import time
from functools import lru_cache
from typing import Mapping, NamedTuple

from regions.otsserver.errors import auth_failed, invalid_date, missing_header

SIGNATURE_V2 = "x-ots-signature"
SIGNATURE_V4 = "x-ots-signaturev4"
SIGN_DATE = "x-ots-signdate"
SIGN_REGION = "x-ots-signregion"
REQUIRED_HEADERS = ("x-ots-date", "x-ots-apiversion", "x-ots-accesskeyid",
                    "x-ots-instancename", "x-ots-contentmd5")
MAX_CLOCK_SKEW_S = 15 * 60


class Verified(NamedTuple):
    """Who a verified request came from, and the key that signs its response."""
    access_key_id: str
    signing_key: bytes


def headers_string(headers: Mapping[str, str]) -> str:
    """The canonical x-ots-* header block (signature headers excluded)."""
    items = []
    for name, value in headers.items():
        name = name.lower()
        if name.startswith("x-ots-") and name != SIGNATURE_V2 and name != SIGNATURE_V4:
            items.append("%s:%s" % (name, value.strip()))
    items.sort()
    return "\n".join(items)


def _b64_hmac(key: bytes, msg: str, digest) -> str:
    return base64.b64encode(hmac.new(key, msg.encode("utf-8"), digest).digest()).decode("ascii")


def canonical_request(api: str, headers: Mapping[str, str]) -> str:
    return "/%s\nPOST\n\n%s\n" % (api, headers_string(headers))


def v2_signature(secret: str, api: str, headers: Mapping[str, str]) -> str:
    return _b64_hmac(secret.encode("utf-8"), canonical_request(api, headers), hashlib.sha1)


@lru_cache(maxsize=256)
def v4_signing_key(secret: str, sign_date: str, region: str) -> bytes:
    key = ("aliyun_v4" + secret).encode("utf-8")
    for part in (sign_date, region, "ots", "aliyun_v4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(key)


def v4_signature(secret: str, api: str, headers: Mapping[str, str]) -> str:
    key = v4_signing_key(secret, headers[SIGN_DATE], headers[SIGN_REGION])
    return _b64_hmac(key, canonical_request(api, headers) + "ots", hashlib.sha256)


def response_authorization(access_key_id: str, signing_key: bytes, api: str,
                           headers: Mapping[str, str]) -> str:
    """The ``authorization`` header value for a response with these x-ots-* headers."""
    sig = _b64_hmac(signing_key, headers_string(headers) + "\n/" + api, hashlib.sha1)
    return "OTS %s:%s" % (access_key_id, sig)


def content_md5(body: bytes) -> str:
    return base64.b64encode(hashlib.md5(body).digest()).decode("ascii")


_second = (-1, "")   # (epoch second, its "YYYY-MM-DDTHH:MM:SS." text): one strftime a second


def format_date(now: datetime.datetime | None = None) -> str:
    """UTC time as the service writes x-ots-date (milliseconds, 'Z').

    Without ``now``: the current time, formatted once per second (the cached
    prefix is one tuple, replaced atomically: safe from any thread).
    """
    global _second
    if now is not None:
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)
    t = time.time()
    sec = int(t)
    cached = _second
    if cached[0] != sec:
        cached = _second = (sec, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(sec)))
    return "%s%03dZ" % (cached[1], int((t - sec) * 1000))


_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{1,6})Z\Z", re.ASCII)


@lru_cache(maxsize=1024)
def parse_date(text: str) -> float:
    """x-ots-date ("2025-01-02T03:04:05.678Z", 1-6 fraction digits) -> POSIX seconds.

    Cached: the SDK writes whole seconds (".000Z"), so consecutive requests
    repeat the same text.  Raises ValueError for anything else (not cached).
    """
    m = _DATE.match(text)
    if m is None:
        raise ValueError("invalid date %r" % text)
    y, mo, d, h, mi, s, frac = m.groups()
    # datetime validates the fields (month 13, Feb 30, hour 24 -> ValueError)
    when = datetime.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s))
    return calendar.timegm(when.timetuple()) + int(frac) / 10 ** len(frac)


class Authenticator:
    """Checks requests against one instance name and a set of key pairs.

    ``keys`` maps access key id -> secret.  ``check_instance`` False accepts
    any instance name (the cloud binds the instance to the host name, so a
    local endpoint may choose to be lenient).
    """

    def __init__(self, instance_name: str, keys: Mapping[str, str], check_instance: bool = True,
                 max_clock_skew_s: int = MAX_CLOCK_SKEW_S):
        if not keys:
            raise ValueError("Authenticator needs at least one access key pair")
        for key_id, secret in keys.items():
            if not isinstance(key_id, str) or not key_id or not isinstance(secret, str) or not secret:
                raise ValueError("access key id and secret must be non-empty str")
        self.instance_name = instance_name
        self.keys = dict(keys)
        self.check_instance = check_instance
        self.max_clock_skew_s = max_clock_skew_s

    def verify(self, api: str, headers: Mapping[str, str], body: bytes,
               now: datetime.datetime | None = None) -> Verified:
        """Verify a request; ``headers`` must have lower-case names.

        Raises AuthError with the service's code, status and message.
        """
        verified = self.verify_head(api, headers, now)
        self.verify_body(headers, body)
        return verified

    def verify_head(self, api: str, headers: Mapping[str, str],
                    now: datetime.datetime | None = None) -> Verified:
        """Everything ``verify`` checks but the body's MD5: the signature
        covers x-ots-contentmd5, so a front end can refuse a forged request
        before it reads (and allocates) the body it declares."""
        for name in REQUIRED_HEADERS:
            if name not in headers:
                raise missing_header(name)
        v4 = SIGNATURE_V4 in headers
        if not v4 and SIGNATURE_V2 not in headers:
            raise missing_header(SIGNATURE_V2)
        if v4:
            for name in (SIGN_DATE, SIGN_REGION):
                if name not in headers:
                    raise missing_header(name)
        key_id = headers["x-ots-accesskeyid"]
        secret = self.keys.get(key_id)
        if secret is None:
            raise auth_failed("The AccessKeyID does not exist.")
        if self.check_instance and headers["x-ots-instancename"] != self.instance_name:
            raise auth_failed("The instance is not found.")
        date = headers["x-ots-date"]
        try:
            sent = parse_date(date)
        except ValueError:
            raise invalid_date(date) from None
        current = time.time() if now is None else now.timestamp()
        if abs(current - sent) > self.max_clock_skew_s:
            raise auth_failed("Mismatch between system time and x-ots-date: %s." % date)
        if v4:
            expected = v4_signature(secret, api, headers)
            given = headers[SIGNATURE_V4]
            signing_key = v4_signing_key(secret, headers[SIGN_DATE], headers[SIGN_REGION])
        else:
            expected = v2_signature(secret, api, headers)
            given = headers[SIGNATURE_V2]
            signing_key = secret.encode("utf-8")
        if not hmac.compare_digest(expected.encode("ascii"), given.encode("utf-8", "replace")):
            raise auth_failed("Signature mismatch.")
        return Verified(key_id, signing_key)

    @staticmethod
    def verify_body(headers: Mapping[str, str], body: bytes) -> None:
        """The body is the one whose MD5 the (verified) head carries."""
        if headers["x-ots-contentmd5"] != content_md5(body):
            raise auth_failed("Mismatch between MD5 value of request body and x-ots-contentmd5 in header.")
