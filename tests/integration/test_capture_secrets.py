"""What a capture may not hold: credentials (either mode) and raw values (redacted mode).

Credentials: the auth commands were left out of a capture, but not their replies, nor a hello
carrying `speculativeAuthenticate`. A full capture held the SCRAM exchange: the user name and client
nonce (the hello's first message), the server's salt, iteration count and nonce (saslStart's and
the handshake's reply) and its signature (saslContinue's reply), enough for an offline password
guess; a redacted capture held the user name; both held the password of an explained createUser.
Now a request that carries credentials and its reply are both left out, whatever the mode.

Values (docs/capture-format.md: "every value in filters, documents, update specs and $match stages
replaced by a ... pseudonym"): a redacted capture kept raw a bulkWrite's documents, filters and
update specs, an explain's wrapped filter, $match stages nested in $lookup/$facet/$unionWith,
update constants, comments, index partial filters and stage literals.
"""
from __future__ import annotations

import re

import bson
import pytest
from bson.son import SON

from wire_peer import RawClient, WirePeer, encode_op_msg, next_request_id

pytestmark = pytest.mark.needs_proxy

CLIENT_FIRST = b"n,,n=capture-user,r=CLIENTNONCE0001"
SERVER_FIRST = b"r=CLIENTNONCE0001SERVERNONCE0002,s=U0FMVHNhbHRTQUxUc2FsdA==,i=15000"
CLIENT_FINAL = b"c=biws,r=CLIENTNONCE0001SERVERNONCE0002,p=CLIENTPROOFAAAA="
SERVER_FINAL = b"v=SERVERSIGNATUREBBBB="
SECRETS = {
    "user name": b"capture-user",
    "client nonce": b"CLIENTNONCE0001",
    "server nonce": b"SERVERNONCE0002",
    "salt": b"U0FMVHNhbHRTQUxUc2FsdA==",
    "proof": b"CLIENTPROOFAAAA",
    "server signature": b"SERVERSIGNATUREBBBB",
    "password": b"capture-password-9",
}


class ScramPeer(WirePeer):
    """Answers a SCRAM conversation (and a hello's speculative start) as mongod would."""

    def _cmd_saslstart(self, conn, cmd, seqs, db):
        return {"conversationId": 1, "done": False, "payload": bson.Binary(SERVER_FIRST), "ok": 1.0}

    def _cmd_saslcontinue(self, conn, cmd, seqs, db):
        return {"conversationId": 1, "done": True, "payload": bson.Binary(SERVER_FINAL), "ok": 1.0}

    def _hello(self, conn, cmd, legacy):
        d = super()._hello(conn, cmd, legacy)
        if "speculativeAuthenticate" in cmd:
            d["speculativeAuthenticate"] = {"conversationId": 1, "done": False, "payload": bson.Binary(SERVER_FIRST)}
        return d


def _command(rc: RawClient, doc: list) -> dict:
    rc.send(encode_op_msg(SON(doc), request_id=next_request_id()))
    return rc.recv_message(timeout=10).body


def _speculative_hello() -> list:
    start = SON([("saslStart", 1), ("mechanism", "SCRAM-SHA-256"), ("payload", bson.Binary(CLIENT_FIRST)), ("db", "admin")])
    return [("hello", 1), ("speculativeAuthenticate", start), ("$db", "admin")]


@pytest.mark.parametrize("mode", ["full", "redacted"])
def test_a_capture_holds_no_credentials(proxy, workdir, mode):
    peer = ScramPeer().start()
    try:
        cap = workdir / "auth.cap"
        px = proxy(peer.uri, "--capture.file", str(cap), "--capture.mode", mode)
        with RawClient.for_address(px.address, timeout=10) as rc:
            assert "speculativeAuthenticate" in _command(rc, _speculative_hello())  # the handshake
            assert _command(rc, [("saslStart", 1), ("mechanism", "SCRAM-SHA-256"),
                                 ("payload", bson.Binary(CLIENT_FIRST)), ("$db", "admin")])["ok"] == 1.0
            assert _command(rc, [("saslContinue", 1), ("conversationId", 1),
                                 ("payload", bson.Binary(CLIENT_FINAL)), ("$db", "admin")])["ok"] == 1.0
            # A later hello starting authentication again (reauthentication on the same connection).
            assert "speculativeAuthenticate" in _command(rc, _speculative_hello())
            # An explain of createUser: the server refuses it, but its pwd passed the capture first.
            _command(rc, [("explain", SON([("createUser", "u"), ("pwd", "capture-password-9"), ("roles", [])])),
                          ("$db", "admin")])
            assert _command(rc, [("ping", 1), ("comment", "after-auth-marker"), ("$db", "admin")])["ok"] == 1.0
        px.stop()  # flushes the capture
    finally:
        peer.stop()
    raw = b"".join(p.read_bytes() for p in sorted(workdir.glob("auth.cap*")))
    if mode == "full":
        assert b"after-auth-marker" in raw, "the capture works: the ping after the exchange is in it"
    else:
        assert b"ping" in raw, "the capture works: the ping after the exchange is in it"
    held = [name for name, secret in SECRETS.items() if secret in raw]
    assert not held, f"the {mode} capture holds {held}"


def test_a_redacted_capture_holds_no_raw_value(ferretdb, proxy, workdir):
    cap = workdir / "values.cap"
    px = proxy(ferretdb.uri, "--capture.file", str(cap))  # redacted is the default
    commands = [
        [("bulkWrite", 1), ("ops", [{"insert": 0, "document": {"_id": 1, "email": "SECRET_bulk_document"}},
                                    {"update": 0, "filter": {"email": "SECRET_bulk_filter"},
                                     "updateMods": {"$set": {"email": "SECRET_bulk_mods"}}},
                                    {"delete": 0, "filter": {"email": "SECRET_bulk_delete"}, "multi": False}]),
         ("nsInfo", [{"ns": "shop.people"}]), ("$db", "admin")],
        [("explain", SON([("find", "people"), ("filter", {"email": "SECRET_explain"})])), ("$db", "shop")],
        [("find", "people"), ("filter", {}), ("comment", "SECRET_comment"), ("$db", "shop")],
        [("update", "people"), ("updates", [{"q": {}, "u": [{"$set": {"x": "$$v"}}], "c": {"v": "SECRET_constants"}}]),
         ("$db", "shop")],
        [("createIndexes", "people"), ("indexes", [{"key": {"email": 1}, "name": "email_1",
                                                   "partialFilterExpression": {"email": "SECRET_partial"}}]),
         ("$db", "shop")],
        [("aggregate", "people"), ("pipeline", [
            {"$lookup": {"from": "x", "as": "y", "pipeline": [{"$match": {"email": "SECRET_lookup"}}]}},
            {"$facet": {"f": [{"$match": {"email": "SECRET_facet"}}]}},
            {"$unionWith": {"coll": "z", "pipeline": [{"$match": {"email": "SECRET_union"}}]}},
            {"$addFields": {"k": "SECRET_addfields"}}]), ("cursor", {}), ("$db", "shop")],
    ]
    with RawClient.for_address(px.address, timeout=10) as rc:
        for doc in commands:
            _command(rc, doc)
    px.stop()
    raw = b"".join(p.read_bytes() for p in sorted(workdir.glob("values.cap*")))
    assert b"shop.people" in raw and b"email" in raw, "namespaces and field names are kept"
    leaked = sorted(set(m.decode() for m in re.findall(rb"SECRET_[a-z_]+", raw)))
    assert not leaked, f"raw values in a redacted capture: {leaked}"
