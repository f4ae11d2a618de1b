"""Client documents are checked for structure, not for the text of their strings (issue 19).

libbson's bson_validate decoded every string value as UTF-8 (60 % of the proxy's CPU for a 16 MB
insert), then ignored the result and accepted the document without reading the elements after an
invalid string. The proxy's own check (protocol/op_msg.cpp isValidBson) reads every element and no
string's bytes. These tests pin both sides, with routing, statistics and evaluation on: a document
whose strings are not UTF-8 (in the shard key too) is forwarded untouched (mongos decides), the
proxy's features read it without harm; a malformed element after such a string is refused."""
from __future__ import annotations

import json
import struct
import time
import urllib.request
from pathlib import Path

import bson
import pytest

from wire_peer import OP_MSG, RawClient, header, next_request_id

pytestmark = pytest.mark.needs_proxy

ROUTING = Path(__file__).resolve().parents[1] / "data" / "routing" / "orders_6shards.json"


def _element(type_byte: int, key: bytes, value: bytes) -> bytes:
    return bytes([type_byte]) + key + b"\x00" + value


def _string(raw: bytes) -> bytes:
    return struct.pack("<i", len(raw) + 1) + raw + b"\x00"


def _document(*elements: bytes) -> bytes:
    body = b"".join(elements)
    return struct.pack("<i", 4 + len(body) + 1) + body + b"\x00"


def _insert(doc: bytes) -> bytes:
    body = bson.encode({"insert": "orders", "$db": "shop", "ordered": True})
    seq = b"documents\x00" + doc
    payload = struct.pack("<I", 0) + b"\x00" + body + b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    return header(16 + len(payload), next_request_id(), 0, OP_MSG) + payload


def _not_utf8_document(payload_bytes: int) -> bytes:
    return _document(
        _element(0x10, b"_id", struct.pack("<i", 7)),
        _element(0x02, b"customerId", _string(b"C\xff\xfe0800")),  # the shard key's first field
        _element(0x09, b"orderDate", struct.pack("<q", 1_700_000_000_000)),
        _element(0x02, b"payload", _string(b"x" * payload_bytes + b"\xc3(")),  # a broken sequence at its end
    )


@pytest.mark.parametrize("payload_bytes", [100, 4_000_000])
def test_strings_that_are_not_utf8_are_forwarded_untouched(wire_peer, proxy, payload_bytes):
    peer = wire_peer()
    px = proxy(peer.uri, "--routing", str(ROUTING), admin=True)
    frame = _insert(_not_utf8_document(payload_bytes))
    with RawClient.for_address(px.address, timeout=30) as rc:
        rc.hello()
        rc.send(frame)
        reply = rc.recv_message(timeout=30)
        assert reply is not None, "the proxy closed the connection on a document it should forward"
    f = peer.wait_for(lambda f: f.command_name == "insert", timeout=10)
    assert f is not None, "the insert never reached the upstream"
    assert f.message.effective.raw[16:] == frame[16:], "the document was changed on its way"
    # Evaluation and statistics took it in: their pages still render, the proxy still serves.
    with urllib.request.urlopen(px.admin_url + "/evaluate/sketches", timeout=10) as r:
        sketches = json.loads(r.read())
    orders = [n for n in sketches["namespaces"] if n["ns"] == "shop.orders"]
    assert orders and orders[0]["inserts"]["$numberLong"] == "1"
    with urllib.request.urlopen(px.admin_url + "/evaluate", timeout=10) as r:
        assert r.status == 200
    assert px.alive()


def test_a_malformed_element_after_a_string_that_is_not_utf8_is_refused(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri, "--routing", str(ROUTING))
    doc = _document(
        _element(0x10, b"_id", struct.pack("<i", 8)),
        _element(0x02, b"note", _string(b"a\xffb")),
        _element(0x08, b"flag", b"\x02"),  # a boolean is 0 or 1: libbson's check never got this far
    )
    with RawClient.for_address(px.address, timeout=10) as rc:
        rc.hello()
        try:
            rc.send(_insert(doc))
        except OSError:
            pass
        rc.drain(timeout=3)
    time.sleep(0.2)
    assert not [f for f in peer.frames_snapshot() if f.command_name == "insert"], "a malformed document was forwarded"
    assert px.alive()
