"""The request-head parser: what it accepts, what it names as wrong."""
import pytest

from regions.otsserver.httphead import MAX_HEADERS, BadHead, parse_head

SDK_HEAD = (b"POST /PutRow HTTP/1.1\r\n"
            b"Host: 127.0.0.1:8800\r\n"
            b"Accept-Encoding: identity\r\n"
            b"Content-Length: 129\r\n"
            b"x-ots-date: 2025-01-01T00:00:00.000Z\r\n"
            b"X-OTS-ContentMD5:   abc==  \r\n"
            b"User-Agent: aliyun-tablestore-sdk-python/6.4.8")


def test_sdk_head_is_parsed_with_lower_case_names_and_stripped_values():
    head = parse_head(SDK_HEAD)
    assert (head.method, head.target, head.version) == ("POST", "/PutRow", "HTTP/1.1")
    assert head.headers == {
        "host": "127.0.0.1:8800", "accept-encoding": "identity", "content-length": "129",
        "x-ots-date": "2025-01-01T00:00:00.000Z", "x-ots-contentmd5": "abc==",
        "user-agent": "aliyun-tablestore-sdk-python/6.4.8"}
    assert head.api == "PutRow" and head.keep_alive()


def test_api_is_the_last_path_segment_without_query():
    assert parse_head(b"POST /prefix/GetRow?x=1 HTTP/1.1").api == "GetRow"
    assert parse_head(b"POST / HTTP/1.1").api == ""


def test_keep_alive_by_version_and_connection_header():
    assert not parse_head(b"POST /A HTTP/1.1\r\nConnection: close").keep_alive()
    assert not parse_head(b"POST /A HTTP/1.0").keep_alive()
    assert parse_head(b"POST /A HTTP/1.0\r\nConnection: Keep-Alive").keep_alive()


def test_folded_header_continues_the_previous_value_and_last_repeat_wins():
    head = parse_head(b"POST /A HTTP/1.1\r\nX-A: one\r\n  two\r\nX-B: 1\r\nx-b: 2")
    assert head.headers == {"x-a": "one two", "x-b": "2"}


@pytest.mark.parametrize("raw,status,words", [
    (b"\x00\x01garbage", 400, "Bad request line"),
    (b"POST /A", 400, "Bad request line"),
    (b"POST  /A HTTP/1.1", 400, "Bad request line"),
    (b"POST /A HTTP/2.0", 505, "Unsupported HTTP version"),
    (b"POST /A FTP/1.0", 400, "Unsupported HTTP version"),
    (b"POST /A HTTP/1.1\r\nno colon here", 400, "Bad header line"),
    (b"POST /A HTTP/1.1\r\n: empty name", 400, "Bad header line"),
    (b"POST /A HTTP/1.1\r\nName : space before colon", 400, "Bad header line"),
    (b"POST /A HTTP/1.1\r\n folded first", 400, "Bad header line"),
    (b"POST /A HTTP/1.1" + b"\r\nx: y" * (MAX_HEADERS + 1), 431, "Too many headers"),
    (b"POST /A HTTP/1.1\r\nx: " + b"y" * 70000, 431, "too large"),
])
def test_bad_heads_name_the_problem_and_the_status(raw, status, words):
    with pytest.raises(BadHead, match=words) as e:
        parse_head(raw)
    assert e.value.status == status
    assert isinstance(e.value, ValueError)


def test_head_must_be_bytes():
    with pytest.raises(TypeError, match="bytes"):
        parse_head("POST /A HTTP/1.1")
