"""kube/jsoncodec.py gives exactly the standard library's results (values, key order, errors), only faster."""

import datetime
import json
import random
import struct

import pytest

from scheduler.kube import jsoncodec
from scheduler.kube.reflector import _line_batches, decode_events


def outcome(fn, *args):
    try:
        value = fn(*args)
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return ("error", type(exc), str(exc))
    return ("value", repr(value), _key_orders(value))


def _key_orders(value):
    """Every dict's keys in order (repr shows them too, but say it)."""
    if isinstance(value, dict):
        return [list(value), [_key_orders(v) for v in value.values()]]
    if isinstance(value, list):
        return [_key_orders(v) for v in value]
    return None


TEXTS = [
    '{"a": 1, "b": [true, false, null], "c": {"d": "e"}}',
    '{"a":1,"b":2,"a":3}',  # duplicate keys: the last value, at the first key's place
    "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "123456789012345678901234567890", "-99999999999999999999",
    '{"n": 1234567890123456789012}', '["12345678901234567890123"]',  # a long digit run in a string: json reads it
    "1e400", "-1e400", "1e-400", "1.7976931348623159e308", "NaN", "Infinity", "-Infinity",
    '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"\\u0000"', '"\\u00e9"', '"é"',
    "", " ", "[1,]", "01", "+1", ".5", "1.", '"\t"', "{} x", "[" * 2000 + "]" * 2000, "-0", "-0.0", "1E5",
    "\ufeff{}", "\x0c1",
]


@pytest.mark.parametrize("text", TEXTS)
def test_loads_gives_json_loads_result_for_text_and_bytes(text):
    assert outcome(jsoncodec.loads, text) == outcome(json.loads, text)
    data = text.encode("utf-8", errors="surrogatepass")
    assert outcome(jsoncodec.loads, data) == outcome(json.loads, data)


@pytest.mark.parametrize("data", [
    b"\xef\xbb\xbf{}",  # a byte order mark: json.loads on bytes reads it as utf-8-sig
    '{"a": 1}'.encode("utf-16"), '{"a": 1}'.encode("utf-16-le"), '{"a": 1}'.encode("utf-32"),
    b'{"a": "\xff"}', b'"\xed\xa0\x80"',  # invalid UTF-8; a surrogate encoded (json's surrogatepass reads it)
])
def test_loads_of_bytes_orjson_refuses_gives_json_loads_result(data):
    assert outcome(jsoncodec.loads, data) == outcome(json.loads, data)


def test_floats_are_read_to_the_same_double():
    rng = random.Random(13)
    for _ in range(20_000):
        x = struct.unpack("d", rng.randbytes(8))[0]
        mantissa = rng.randrange(10 ** rng.randrange(1, 18))
        for text in (repr(x), f"{x:.17g}", f"{x:.12e}", f"{x:.3f}",
                     f"{mantissa}.{rng.randrange(10 ** 6)}e{rng.randrange(-330, 310)}"):
            assert outcome(jsoncodec.loads, text) == outcome(json.loads, text), text


def test_integers_near_64_bits_are_ints_as_json_reads_them():
    for n in (2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 10 ** 18, 10 ** 19, 10 ** 25):
        for v in (n, -n):
            assert jsoncodec.loads(str(v)) == v and type(jsoncodec.loads(str(v))) is int
            assert jsoncodec.loads(json.dumps({"x": [v]}).encode()) == {"x": [v]}


def old_line(line: bytes):
    """What the reflector did with a watch line before: decoded with replacement, blank skipped, json.loads."""
    text = line.decode("utf-8", errors="replace")
    return jsoncodec.BLANK if not text.strip() else json.loads(text)


@pytest.mark.parametrize("line", [
    b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}', b'{"type":"ADDED","object":{"a":"\xff\xfe"}}',
    b"null", b"\x1c\x1d", "\u2028\u00a0".encode(), b"\xff", b'{"a": NaN}', b'{"rv": 12345678901234567890123}',
    b'{"type": "ADDED"', b'"\\ud800"',
])
def test_a_watch_line_reads_as_before(line):
    assert outcome(jsoncodec.loads_line, line) == outcome(old_line, line)


def test_decode_events_leaves_out_lines_of_only_whitespace_and_keeps_json_null():
    class Response:
        def stream(self, amt=None, decode_content=False):
            yield b'{"type":"ADDED","object":{"a":1}}\n  \n\x1c\n'
            yield "\u00a0\n".encode() + b'null\n{"type":"DELETED",'
            yield b'"object":{"b":"\xff"}}\n'

    batches = list(_line_batches(Response()))
    assert [decode_events(b) for b in batches] == [[{"type": "ADDED", "object": {"a": 1}}], [None],
                                                   [{"type": "DELETED", "object": {"b": "\ufffd"}}]]


class Text(str):
    pass


@pytest.mark.parametrize("value", [
    {"a": [1, 2.5, None, True, "é", {"b": {}}]}, {"big": 2 ** 64, "neg": -(2 ** 63) - 1}, {"s": "\ud800"},
    {1: "a", None: "b", 2.5: "c"}, {"t": Text("x")}, [0.1, 1e16, 1e-7, 123456789.123456789, -0.0],
])
def test_dumps_text_reads_back_as_json_dumps_text(value):
    assert outcome(json.loads, jsoncodec.dumps_text(value)) == outcome(json.loads, json.dumps(value))


def test_dumps_text_of_what_json_cannot_encode_raises_as_json_dumps():
    for value in ({"at": datetime.datetime(2026, 12, 7)}, {"x": {1, 2}}, object()):
        assert outcome(jsoncodec.dumps_text, value)[:2] == outcome(json.dumps, value)[:2]


@pytest.mark.parametrize("value", [
    {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "d", "uid": "u"},
     "target": {"apiVersion": "v1", "kind": "Node", "name": "n"}},
    {"note": "é ü \u2028", "count": 2 ** 64, "big": -(2 ** 63) - 1}, {"s": "\ud800"}, {1: "a"}, {"t": Text("x")},
    {"status": {"nominatedNodeName": None}}, {"x": float("nan")}, {"x": [float("inf"), -float("inf"), 1.5]},
])
def test_a_request_body_reads_as_json_dumps_bytes(value):
    assert outcome(json.loads, jsoncodec.dumps_body(value)) == outcome(json.loads, json.dumps(value).encode())


def test_a_body_with_a_non_finite_float_is_json_dumps_bytes_exactly():
    # orjson would write null: the API server would take a value json.dumps never sent (it refuses NaN)
    for value in ({"x": float("nan")}, {"x": [1, float("inf")]}):
        assert jsoncodec.dumps_body(value) == json.dumps(value).encode()
