"""Request compression (the Java SDK's ``setEnableRequestCompression``): a
deflated body with ``x-ots-request-compress-type: deflate`` and the inflated
size in ``x-ots-request-compress-size``, its MD5 and signature over the bytes
sent.  Every API answers a compressed request as it answers the plain one;
a body that does not inflate to its declared size, an unknown type, a size
past the body limit are refused with the reason, and nothing is applied."""
import zlib

import pytest

from regions.otsserver import wire as pb
from regions.otsserver.convert import CODEC
from regions.otsserver.http import MAX_BODY_BYTES, inflate
from test_otsserver_sdk import raw_post, server  # noqa: F401 (server: a fixture)
from test_otsserver_wire import _requests, response_class


def post(srv, api, raw, *, kind="deflate", size=None, body=None, sign=True):
    """POST ``raw`` deflated (or ``body`` as given), signed as the Java SDK signs it."""
    return raw_post(srv, api, zlib.compress(raw) if body is None else body, extra={
        "x-ots-request-compress-type": kind,
        "x-ots-request-compress-size": str(len(raw) if size is None else size)}, sign_extra=sign)


def error_of(data):
    err = pb.Error.FromString(data)
    return err.code, err.message


def test_every_api_answers_a_compressed_request(server):
    answered = {}
    txn = None
    for api, req in _requests():
        if req is None:
            req = getattr(pb, api + "Request")(transaction_id=txn)
        elif callable(req):
            req = req(answered)
        status, data = post(server, api, req.SerializeToString())
        assert status == 200, (api, error_of(data))
        resp = response_class(api).FromString(data)
        assert resp.IsInitialized()
        answered.setdefault(api, []).append(resp)
        if api == "StartLocalTransaction":
            txn = resp.transaction_id
    assert [r.is_ok for t in answered["BatchWriteRow"] for r in t.tables[0].rows] == [True] * 4
    assert len(answered["GetStreamRecord"][0].stream_records) == 1


def put_request(key):
    return pb.PutRowRequest(table_name="t", row=CODEC.encode_row(
        [("gid", key), ("uid", "a")], [("i", key)]), condition=pb.Condition(
            row_existence=pb.IGNORE)).SerializeToString()


@pytest.mark.parametrize("change, problem", [
    (dict(size=1), "does not inflate to x-ots-request-compress-size 1"),
    (dict(size=10_000), "does not inflate to x-ots-request-compress-size 10000"),
    (dict(body=b"not deflate at all"), "it does not inflate"),
    (dict(kind="lz4"), "unsupported x-ots-request-compress-type: lz4"),
    (dict(size="12x"), "is not a size: 12x"),
])
def test_a_body_that_is_not_what_it_says_is_refused_and_changes_nothing(server, change, problem):
    status, _ = post(server, "CreateTable", _requests()[0][1].SerializeToString())
    assert status == 200
    status, data = post(server, "PutRow", put_request(1), **change)
    assert status == 400
    code, message = error_of(data)
    assert code == "OTSParameterInvalid" and problem in message
    get = pb.GetRowRequest(table_name="t", max_versions=1,
                           primary_key=CODEC.encode_row([("gid", 1), ("uid", "a")]))
    status, data = post(server, "GetRow", get.SerializeToString())
    assert status == 200 and pb.GetRowResponse.FromString(data).row == b""
    assert post(server, "PutRow", put_request(1))[0] == 200        # the same put, well formed
    status, data = post(server, "GetRow", get.SerializeToString())
    assert status == 200 and pb.GetRowResponse.FromString(data).row != b""


def test_a_small_body_cannot_inflate_past_the_body_limit():
    bomb = zlib.compress(b"\0" * (MAX_BODY_BYTES + 1))
    assert len(bomb) < 10_000
    headers = {"x-ots-request-compress-type": "deflate",
               "x-ots-request-compress-size": str(MAX_BODY_BYTES + 1)}
    with pytest.raises(Exception) as e:
        inflate(headers, bomb, MAX_BODY_BYTES)
    assert e.value.http_status == 413
    # a size within the limit that the body exceeds: only size + 1 bytes are ever inflated
    headers["x-ots-request-compress-size"] = "100"
    with pytest.raises(Exception) as e:
        inflate(headers, bomb, MAX_BODY_BYTES)
    assert e.value.http_status == 400


def test_the_signature_covers_the_compress_headers(server):
    status, data = post(server, "CreateTable", _requests()[0][1].SerializeToString(), sign=False)
    assert status == 403 and error_of(data) == ("OTSAuthFailed", "Signature mismatch.")
