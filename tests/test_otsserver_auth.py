"""Signatures: published test vectors, then the SDK's own request/response code as oracle."""
import datetime
import logging

import pytest
from tablestore.auth import RequestContext, SignV2, SignV4
from tablestore.credentials import Credentials
from tablestore.error import OTSClientError
from tablestore.protocol import OTSProtocol

from regions.otsserver.auth import (
    Authenticator, content_md5, format_date, response_authorization,
    v2_signature, v4_signature, v4_signing_key,
)
from regions.otsserver.errors import AuthError

VECTOR_HEADERS = {
    "x-ots-date": "2025-01-01T00:00:00.000Z",
    "x-ots-apiversion": "2015-12-31",
    "x-ots-accesskeyid": "testid",
    "x-ots-instancename": "local",
    "x-ots-contentmd5": "1B2M2Y8AsgTpgAmY7PhCfg==",
}


def test_v2_request_signature_vector():
    assert v2_signature("testsecret", "ListTable", VECTOR_HEADERS) == "MPY6NO3B/WknRKaHAuZsyesC53A="


def test_v4_signing_key_and_signature_vector():
    assert v4_signing_key("testsecret", "20250101", "cn-hangzhou") == \
        b"HQFx8JHijjhdaEVWY2I9Cja/jwOrB3UhKF8+tvCg3SE="
    headers = dict(VECTOR_HEADERS, **{"x-ots-signdate": "20250101", "x-ots-signregion": "cn-hangzhou"})
    assert v4_signature("testsecret", "ListTable", headers) == \
        "ETT3D9oFxYk7JbqtFoIf6fwzfYK5mH9iWXTEMRqWHys="


def test_response_signature_vector():
    headers = {"x-ots-contentmd5": "1B2M2Y8AsgTpgAmY7PhCfg==", "x-ots-contenttype": "protocol buffer",
               "x-ots-date": "2025-01-01T00:00:00.000Z", "x-ots-requestid": "r1"}
    assert response_authorization("testid", b"testsecret", "ListTable", headers) == \
        "OTS testid:GM4ds8wQjSp1rN8l2MRvIiMhfMA="


def test_empty_body_md5_and_date_format():
    assert content_md5(b"") == "1B2M2Y8AsgTpgAmY7PhCfg=="
    when = datetime.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)
    assert format_date(when) == "2025-01-02T03:04:05.678Z"


# ---------------------------------------------------- SDK-built requests

def sdk_request(signer, api="PutRow", body=b"\x0a\x01t", key_id="ak", secret="sk", instance="inst"):
    proto = OTSProtocol(instance, "utf8", logging.getLogger("t"))
    ctx = RequestContext(Credentials(key_id, secret))
    headers = proto._make_request_headers(body, "/" + api, signer, ctx)
    return {k.lower(): v for k, v in headers.items()}, proto, ctx


AUTH = Authenticator("inst", {"ak": "sk"})


@pytest.mark.parametrize("signer", [SignV2("utf8"), SignV4("utf8", region="cn-test")],
                         ids=["v2", "v4"])
def test_sdk_signed_request_verifies_and_our_response_signature_satisfies_the_sdk(signer):
    headers, proto, ctx = sdk_request(signer)
    verified = AUTH.verify("PutRow", headers, b"\x0a\x01t")
    assert verified.access_key_id == "ak"
    sdk_key = signer.get_signing_key(ctx)  # str (V2 secret) or bytes (V4 key)
    assert verified.signing_key == (sdk_key if isinstance(sdk_key, bytes) else sdk_key.encode())
    body = b"resp"
    resp = {"x-ots-contentmd5": content_md5(body), "x-ots-requestid": "rid",
            "x-ots-date": format_date(), "x-ots-contenttype": "protocol buffer"}
    resp["authorization"] = response_authorization("ak", verified.signing_key, "PutRow", resp)
    proto._check_headers(resp, body, status=200)
    proto._check_authorization("/PutRow", resp, 200, signer, ctx)  # raises if wrong
    resp["authorization"] = response_authorization("ak", b"wrong", "PutRow", resp)
    with pytest.raises(OTSClientError, match="Invalid signature"):
        proto._check_authorization("/PutRow", resp, 200, signer, ctx)


@pytest.mark.parametrize("signer", [SignV2("utf8"), SignV4("utf8", region="cn-test")],
                         ids=["v2", "v4"])
def test_tampered_requests_fail_with_the_service_errors(signer):
    headers, _, _ = sdk_request(signer)
    cases = [
        (dict(headers, **{"x-ots-accesskeyid": "nobody"}), b"\x0a\x01t", "The AccessKeyID does not exist."),
        (headers, b"\x0a\x01u", "Mismatch between MD5 value of request body and x-ots-contentmd5 in header."),
        (dict(headers, **{"x-ots-instancename": "other"}), b"\x0a\x01t", "The instance is not found."),
    ]
    for hdrs, body, message in cases:
        with pytest.raises(AuthError) as e:
            AUTH.verify("PutRow", hdrs, body)
        assert (e.value.http_status, e.value.code, e.value.message) == (403, "OTSAuthFailed", message)
    with pytest.raises(AuthError, match="Signature mismatch"):
        AUTH.verify("GetRow", headers, b"\x0a\x01t")  # signed for PutRow
    with pytest.raises(AuthError, match="Signature mismatch"):
        Authenticator("inst", {"ak": "other-secret"}).verify("PutRow", headers, b"\x0a\x01t")


def test_missing_header_bad_date_and_clock_skew():
    headers, _, _ = sdk_request(SignV2("utf8"))
    without = dict(headers)
    del without["x-ots-date"]
    with pytest.raises(AuthError) as e:
        AUTH.verify("PutRow", without, b"\x0a\x01t")
    assert (e.value.http_status, e.value.message) == (400, "Missing header: 'x-ots-date'.")
    with pytest.raises(AuthError, match="Invalid date format"):
        AUTH.verify("PutRow", dict(headers, **{"x-ots-date": "Wed, 01 Jan 2025"}), b"\x0a\x01t")
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=16)
    with pytest.raises(AuthError, match="Mismatch between system time"):
        AUTH.verify("PutRow", headers, b"\x0a\x01t", now=later)


def test_lenient_instance_and_bad_key_config():
    headers, _, _ = sdk_request(SignV2("utf8"), instance="anything")
    assert Authenticator("inst", {"ak": "sk"}, check_instance=False).verify(
        "PutRow", headers, b"\x0a\x01t").access_key_id == "ak"
    with pytest.raises(ValueError):
        Authenticator("inst", {})
    with pytest.raises(ValueError):
        Authenticator("inst", {"ak": ""})
