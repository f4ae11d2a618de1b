"""A scripted MongoDB wire peer and a raw wire client for shardscope tests.

WirePeer is a tiny MongoDB-like server (threads, one per connection):
  * speaks OP_MSG (kind-0 and kind-1 sections, checksums) and the legacy
    OP_QUERY hello/isMaster handshake (answered with OP_REPLY);
  * negotiates OP_COMPRESSED (snappy 1, zlib 2, zstd 3) through the hello
    `compression` field and answers compressed requests compressed with the
    same compressor (like mongod);
  * answers a small command set from an in-memory store well enough for
    pymongo: hello/isMaster, ping, buildInfo, insert, find (equality filter,
    batchSize, limit), getMore, killCursors, delete, drop, count,
    endSessions, listCollections;
  * streams exhaust getMore replies (moreToCome) when the request allows it;
  * records every frame it receives, raw and parsed (`peer.frames`);
  * injects faults on the next matching command: stop reading, close the
    connection, close in the middle of a reply, send garbage.

RawClient sends hand-crafted bytes to a server (the proxy) and parses what
comes back. Encoders/decoders for the frames are module-level functions.

FerretDB has no OP_COMPRESSED, so upstream-side compression is tested
against this peer.
"""
from __future__ import annotations

import datetime
import os
import socket
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import bson
from bson.int64 import Int64

OP_REPLY = 1
OP_UPDATE = 2001
OP_INSERT = 2002
OP_QUERY = 2004
OP_GET_MORE = 2005
OP_DELETE = 2006
OP_KILL_CURSORS = 2007
OP_COMPRESSED = 2012
OP_MSG = 2013

FLAG_CHECKSUM_PRESENT = 1 << 0
FLAG_MORE_TO_COME = 1 << 1
FLAG_EXHAUST_ALLOWED = 1 << 16

COMPRESSOR_IDS = {"noop": 0, "snappy": 1, "zlib": 2, "zstd": 3}
COMPRESSOR_NAMES = {v: k for k, v in COMPRESSOR_IDS.items()}
NEVER_COMPRESSED = {"hello", "ismaster", "saslstart", "saslcontinue", "getnonce", "authenticate",
                    "createuser", "updateuser", "copydbsaslstart", "copydbgetnonce", "copydb"}

MAX_MESSAGE_SIZE = 48_000_000

# ---------------------------------------------------------------- CRC-32C

_CRC32C_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli). Pure Python: fine for the small frames the peer sees."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---------------------------------------------------------------- compression

def compress(compressor_id: int, data: bytes) -> bytes:
    if compressor_id == 0:
        return data
    if compressor_id == 1:
        import snappy
        return snappy.compress(data)
    if compressor_id == 2:
        return zlib.compress(data)
    if compressor_id == 3:
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown compressor id {compressor_id}")


def decompress(compressor_id: int, data: bytes, size_hint: int | None = None) -> bytes:
    if compressor_id == 0:
        return data
    if compressor_id == 1:
        import snappy
        return snappy.uncompress(data)
    if compressor_id == 2:
        return zlib.decompress(data)
    if compressor_id == 3:
        import zstandard
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=size_hint or MAX_MESSAGE_SIZE)
    raise ValueError(f"unknown compressor id {compressor_id}")


# ---------------------------------------------------------------- frames

_next_request_id = [1000]
_rid_lock = threading.Lock()


def next_request_id() -> int:
    with _rid_lock:
        _next_request_id[0] += 1
        return _next_request_id[0]


def header(length: int, request_id: int, response_to: int, opcode: int) -> bytes:
    return struct.pack("<iiii", length, request_id, response_to, opcode)


def encode_op_msg(body: dict, request_id: int | None = None, response_to: int = 0, flags: int = 0,
                  sequences: dict[str, list[dict]] | None = None, checksum: bool = False) -> bytes:
    """An OP_MSG frame. sequences become kind-1 sections; checksum=True appends CRC-32C."""
    rid = next_request_id() if request_id is None else request_id
    if checksum:
        flags |= FLAG_CHECKSUM_PRESENT
    payload = struct.pack("<I", flags) + b"\x00" + bson.encode(body)
    for ident, docs in (sequences or {}).items():
        data = ident.encode() + b"\x00" + b"".join(bson.encode(d) for d in docs)
        payload += b"\x01" + struct.pack("<i", len(data) + 4) + data
    length = 16 + len(payload) + (4 if flags & FLAG_CHECKSUM_PRESENT else 0)
    msg = header(length, rid, response_to, OP_MSG) + payload
    if flags & FLAG_CHECKSUM_PRESENT:
        msg += struct.pack("<I", crc32c(msg))
    return msg


def encode_op_query(query: dict, collection: str = "admin.$cmd", request_id: int | None = None,
                    flags: int = 0, skip: int = 0, n_return: int = -1) -> bytes:
    rid = next_request_id() if request_id is None else request_id
    payload = struct.pack("<i", flags) + collection.encode() + b"\x00" + struct.pack("<ii", skip, n_return)
    payload += bson.encode(query)
    return header(16 + len(payload), rid, 0, OP_QUERY) + payload


def encode_op_reply(docs: list[dict], response_to: int, request_id: int | None = None, flags: int = 0,
                    cursor_id: int = 0, starting_from: int = 0) -> bytes:
    rid = next_request_id() if request_id is None else request_id
    payload = struct.pack("<iqii", flags, cursor_id, starting_from, len(docs))
    payload += b"".join(bson.encode(d) for d in docs)
    return header(16 + len(payload), rid, response_to, OP_REPLY) + payload


def encode_compressed(message: bytes, compressor_id: int) -> bytes:
    """Wraps an encoded message (with header) into OP_COMPRESSED."""
    length, rid, rto, opcode = struct.unpack_from("<iiii", message)
    body = message[16:]
    comp = compress(compressor_id, body)
    payload = struct.pack("<iiB", opcode, len(body), compressor_id) + comp
    return header(16 + len(payload), rid, rto, OP_COMPRESSED) + payload


@dataclass
class Message:
    raw: bytes
    length: int
    request_id: int
    response_to: int
    opcode: int
    # OP_COMPRESSED
    compressed: bool = False
    compressor_id: int | None = None
    original_opcode: int | None = None
    uncompressed_size: int | None = None
    inner: "Message | None" = None
    # OP_MSG
    flag_bits: int | None = None
    body: dict | None = None
    sequences: dict[str, list[dict]] = field(default_factory=dict)
    section_kinds: list[int] = field(default_factory=list)
    checksum: int | None = None
    checksum_ok: bool | None = None
    # OP_QUERY
    query_flags: int | None = None
    full_collection_name: str | None = None
    number_to_skip: int | None = None
    number_to_return: int | None = None
    query: dict | None = None
    # OP_REPLY
    response_flags: int | None = None
    cursor_id: int | None = None
    starting_from: int | None = None
    number_returned: int | None = None
    documents: list[dict] = field(default_factory=list)
    parse_error: str | None = None

    @property
    def effective(self) -> "Message":
        """The decompressed message for OP_COMPRESSED, else self."""
        return self.inner if self.compressed and self.inner is not None else self

    @property
    def command(self) -> dict | None:
        m = self.effective
        if m.opcode == OP_MSG:
            return m.body
        if m.opcode == OP_QUERY:
            q = m.query or {}
            return q.get("$query", q) if isinstance(q.get("$query"), dict) else q
        return None

    @property
    def command_name(self) -> str | None:
        cmd = self.command
        if not cmd:
            return None
        return next(iter(cmd))

    @property
    def reply_doc(self) -> dict | None:
        m = self.effective
        if m.opcode == OP_MSG:
            return m.body
        if m.opcode == OP_REPLY and m.documents:
            return m.documents[0]
        return None


def parse_message(raw: bytes) -> Message:
    length, rid, rto, opcode = struct.unpack_from("<iiii", raw)
    m = Message(raw=raw, length=length, request_id=rid, response_to=rto, opcode=opcode)
    try:
        if opcode == OP_COMPRESSED:
            orig, usize, cid = struct.unpack_from("<iiB", raw, 16)
            m.compressed, m.original_opcode, m.uncompressed_size, m.compressor_id = True, orig, usize, cid
            body = decompress(cid, raw[25:], usize)
            m.inner = parse_message(header(16 + len(body), rid, rto, orig) + body)
            if len(body) != usize:
                m.parse_error = f"uncompressedSize {usize} != actual {len(body)}"
        elif opcode == OP_MSG:
            flags = struct.unpack_from("<I", raw, 16)[0]
            m.flag_bits = flags
            end = len(raw)
            if flags & FLAG_CHECKSUM_PRESENT:
                end -= 4
                m.checksum = struct.unpack_from("<I", raw, end)[0]
                m.checksum_ok = crc32c(raw[:end]) == m.checksum
            pos = 20
            while pos < end:
                kind = raw[pos]
                pos += 1
                m.section_kinds.append(kind)
                if kind == 0:
                    size = struct.unpack_from("<i", raw, pos)[0]
                    m.body = bson.decode(raw[pos:pos + size])
                    pos += size
                elif kind == 1:
                    size = struct.unpack_from("<i", raw, pos)[0]
                    sec_end = pos + size
                    nul = raw.index(b"\x00", pos + 4)
                    ident = raw[pos + 4:nul].decode()
                    docs = bson.decode_all(raw[nul + 1:sec_end])
                    m.sequences[ident] = docs
                    pos = sec_end
                else:
                    m.parse_error = f"unknown section kind {kind}"
                    break
        elif opcode == OP_QUERY:
            m.query_flags = struct.unpack_from("<i", raw, 16)[0]
            nul = raw.index(b"\x00", 20)
            m.full_collection_name = raw[20:nul].decode()
            m.number_to_skip, m.number_to_return = struct.unpack_from("<ii", raw, nul + 1)
            pos = nul + 9
            size = struct.unpack_from("<i", raw, pos)[0]
            m.query = bson.decode(raw[pos:pos + size])
        elif opcode == OP_REPLY:
            m.response_flags, m.cursor_id, m.starting_from, m.number_returned = struct.unpack_from("<iqii", raw, 16)
            m.documents = bson.decode_all(raw[36:])
    except Exception as e:  # keep the raw bytes; tests look at parse_error
        m.parse_error = f"{type(e).__name__}: {e}"
    return m


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame(sock: socket.socket, max_size: int = MAX_MESSAGE_SIZE) -> bytes | None:
    """One raw frame, or None on EOF. Raises ValueError on an impossible length."""
    hdr = recv_exact(sock, 4)
    if hdr is None:
        return None
    (length,) = struct.unpack("<i", hdr)
    if length < 16 or length > max_size:
        raise ValueError(f"bad message length {length}")
    rest = recv_exact(sock, length - 4)
    if rest is None:
        return None
    return hdr + rest


def run_command(sock: socket.socket, body: dict) -> dict:
    """Sends `body` as an OP_MSG and returns its reply document, asserting ok: 1."""
    sock.sendall(encode_op_msg(body))
    raw = read_frame(sock)
    assert raw is not None, f"no reply to {next(iter(body))}"
    reply = parse_message(raw).reply_doc
    assert reply is not None and reply.get("ok") == 1.0, reply
    return reply


# ---------------------------------------------------------------- the peer

@dataclass
class RecordedFrame:
    conn_id: int
    raw: bytes
    message: Message
    at: float

    @property
    def opcode(self) -> int:
        return self.message.opcode

    @property
    def command_name(self) -> str | None:
        return self.message.command_name


@dataclass
class Fault:
    kind: str  # stop_reading | close | close_mid_reply | reply_then_close | garbage | delay
    command: str | None = None
    remaining: int = 1
    seconds: float = 0.0


class _Conn:
    def __init__(self, conn_id: int, sock: socket.socket):
        self.id = conn_id
        self.sock = sock
        self.compressors: list[str] = []


def _matches(doc: dict, flt: dict) -> bool:
    for k, v in flt.items():
        if k not in doc or doc[k] != v:
            return False
    return True


class WirePeer:
    def __init__(self, compressors: tuple[str, ...] | list[str] = ("zstd", "snappy", "zlib"),
                 host: str = "127.0.0.1", port: int = 0, max_wire_version: int = 21,
                 compress_replies: str = "as-request", default_batch_size: int = 101, exhaust: bool = True,
                 reply_checksum: bool = False, exhaust_pause: float = 0.0):
        """compress_replies: 'as-request' (mongod's behaviour), 'never', or 'always'
        (every non-handshake reply with the first negotiated compressor).
        exhaust: answer a getMore sent with exhaustAllowed by streaming all remaining batches
        with moreToCome (like mongod 4.2+).
        exhaust_pause: seconds between two streamed batches (a slow stream, each batch sent on its own).
        reply_checksum: OP_MSG replies to requests that carried a CRC-32C carry one too (mongod and
        mongos exchange checksums on non-TLS connections; pymongo rejects checksummed replies)."""
        self.supported = list(compressors)
        self.host = host
        self._port = port
        self.max_wire_version = max_wire_version
        self.compress_replies = compress_replies
        self.default_batch_size = default_batch_size
        self.exhaust = exhaust
        self.exhaust_pause = exhaust_pause
        self.reply_checksum = reply_checksum
        self.exhaust_replies = 0
        self.frames: list[RecordedFrame] = []
        self.sent: list[tuple[int, bytes]] = []
        self.errors: list[str] = []
        self.store: dict[str, list[dict]] = {}
        self.cursors: dict[int, tuple[str, list[dict]]] = {}
        self._next_cursor = 7_000_000_000
        self._faults: list[Fault] = []
        self._lock = threading.RLock()
        self._conns: dict[int, _Conn] = {}
        self._next_conn = 0
        self._stopped = threading.Event()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> "WirePeer":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, self._port))
        s.listen(64)
        s.settimeout(0.2)
        self._listener = s
        self._port = s.getsockname()[1]
        self._stopped.clear()
        self._thread = threading.Thread(target=self._accept_loop, name="wire-peer-accept", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._listener:
            self._listener.close()
        with self._lock:
            conns = list(self._conns.values())
        for c in conns:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.sock.close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> "WirePeer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        return f"{self.host}:{self._port}"

    @property
    def uri(self) -> str:
        return f"mongodb://{self.host}:{self._port}/"

    # faults and records
    def add_fault(self, kind: str, command: str | None = None, count: int = 1, seconds: float = 1.0) -> None:
        """kind: stop_reading (read nothing more, never answer), close (close without answering),
        close_mid_reply (send half the reply, then close), reply_then_close (answer, then close at
        once), garbage (random bytes, then close),
        delay (answer after `seconds`)."""
        assert kind in ("stop_reading", "close", "close_mid_reply", "reply_then_close", "garbage", "delay"), kind
        with self._lock:
            self._faults.append(Fault(kind, command, count, seconds))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def frames_snapshot(self) -> list[RecordedFrame]:
        with self._lock:
            return list(self.frames)

    def clear_frames(self) -> None:
        with self._lock:
            self.frames.clear()
            self.sent.clear()

    def connection_count(self) -> int:
        with self._lock:
            return len(self._conns)

    def wait_for(self, predicate, timeout: float = 10.0) -> RecordedFrame | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for f in self.frames_snapshot():
                if predicate(f):
                    return f
            time.sleep(0.02)
        return None

    def _take_fault(self, cmd: str | None) -> Fault | None:
        with self._lock:
            for f in self._faults:
                if f.command is None or (cmd is not None and f.command.lower() == cmd.lower()):
                    f.remaining -= 1
                    if f.remaining <= 0:
                        self._faults.remove(f)
                    return f
        return None

    # serving
    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            sock.settimeout(None)
            with self._lock:
                self._next_conn += 1
                conn = _Conn(self._next_conn, sock)
                self._conns[conn.id] = conn
            threading.Thread(target=self._serve, args=(conn,), name=f"wire-peer-{conn.id}", daemon=True).start()

    def _serve(self, conn: _Conn) -> None:
        try:
            while not self._stopped.is_set():
                try:
                    raw = read_frame(conn.sock)
                except ValueError as e:
                    self.errors.append(f"conn {conn.id}: {e}")
                    break
                except OSError:
                    break
                if raw is None:
                    break
                msg = parse_message(raw)
                with self._lock:
                    self.frames.append(RecordedFrame(conn.id, raw, msg, time.time()))
                if msg.parse_error:
                    self.errors.append(f"conn {conn.id}: {msg.parse_error}")
                fault = self._take_fault(msg.command_name)
                if fault and fault.kind == "stop_reading":
                    while not self._stopped.is_set():
                        time.sleep(0.05)
                    break
                if fault and fault.kind == "close":
                    break
                if fault and fault.kind == "delay":
                    time.sleep(fault.seconds)
                reply = self._reply(conn, msg)
                if reply is None:
                    continue
                if reply == b"":  # unsupported opcode: close like mongod
                    break
                if fault and fault.kind == "close_mid_reply":
                    conn.sock.sendall(reply[: max(1, len(reply) // 2)])
                    break
                if fault and fault.kind == "garbage":
                    conn.sock.sendall(os.urandom(64))
                    break
                with self._lock:
                    self.sent.append((conn.id, reply))
                conn.sock.sendall(reply)
                if fault and fault.kind == "reply_then_close":
                    break
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.pop(conn.id, None)
            try:
                conn.sock.close()
            except OSError:
                pass

    def _reply(self, conn: _Conn, msg: Message) -> bytes | None:
        m = msg.effective
        if m.opcode == OP_QUERY:
            cmd = m.command or {}
            doc = self._handle(conn, cmd, {})
            return encode_op_reply([doc], response_to=msg.request_id)
        if m.opcode != OP_MSG or m.body is None:
            # mongod closes the connection on an unsupported opcode; so do we.
            return None if m.opcode == OP_REPLY else b""
        doc = self._handle(conn, m.body, m.sequences)
        if m.flag_bits and m.flag_bits & FLAG_MORE_TO_COME:
            return None
        name = (m.command_name or "").lower()
        cid = None
        if name not in NEVER_COMPRESSED:
            if self.compress_replies == "as-request" and msg.compressed:
                cid = msg.compressor_id
            elif self.compress_replies == "always" and conn.compressors:
                cid = COMPRESSOR_IDS[conn.compressors[0]]

        want_checksum = bool(self.reply_checksum and m.flag_bits & FLAG_CHECKSUM_PRESENT)

        def frame(d: dict, response_to: int, flags: int = 0) -> tuple[bytes, int]:
            rid = next_request_id()
            out = encode_op_msg(d, request_id=rid, response_to=response_to, flags=flags,
                                checksum=want_checksum)
            return (encode_compressed(out, cid) if cid is not None else out), rid

        exhaust = (self.exhaust and name == "getmore" and m.flag_bits is not None
                   and m.flag_bits & FLAG_EXHAUST_ALLOWED)
        if not exhaust:
            return frame(doc, msg.request_id)[0]
        # Exhaust: stream every remaining batch; all but the last carry moreToCome, and each
        # reply answers the previous one (responseTo = previous reply's requestID).
        out = b""
        response_to = msg.request_id
        while True:
            more = doc.get("ok") == 1 and int(doc["cursor"]["id"]) != 0
            data, rid = frame(doc, response_to, FLAG_MORE_TO_COME if more else 0)
            self.exhaust_replies += 1
            if self.exhaust_pause:  # a slow stream: each batch goes out by itself, a pause apart
                if response_to != msg.request_id:
                    time.sleep(self.exhaust_pause)
                with self._lock:
                    self.sent.append((conn.id, data))
                conn.sock.sendall(data)
                if not more:
                    return None  # all sent here: the caller sends nothing more
            else:
                out += data
                if not more:
                    return out
            response_to = rid
            doc = self._handle(conn, m.body, m.sequences)

    # commands
    def _handle(self, conn: _Conn, cmd: dict, seqs: dict) -> dict:
        name = next(iter(cmd), "")
        lname = name.lower()
        db = cmd.get("$db", "admin")
        try:
            h = getattr(self, f"_cmd_{lname}", None)
            if h is None:
                return {"ok": 0.0, "errmsg": f"no such command: '{name}'", "code": 59,
                        "codeName": "CommandNotFound"}
            return h(conn, cmd, seqs, db)
        except Exception as e:  # a bug in the peer must not look like a proxy bug
            self.errors.append(f"handler {name}: {type(e).__name__}: {e}")
            return {"ok": 0.0, "errmsg": f"wire peer error: {e}", "code": 1, "codeName": "InternalError"}

    def _hello(self, conn: _Conn, cmd: dict, legacy: bool) -> dict:
        if "maxAwaitTimeMS" in cmd:  # awaitable hello: with no topology change, answered when the wait ends
            self._stopped.wait(cmd["maxAwaitTimeMS"] / 1000)
        if "compression" in cmd:
            conn.compressors = [c for c in cmd.get("compression") or [] if c in self.supported]
        d = {
            "helloOk": True,
            ("ismaster" if legacy else "isWritablePrimary"): True,
            "topologyVersion": None,
            "maxBsonObjectSize": 16 * 1024 * 1024,
            "maxMessageSizeBytes": MAX_MESSAGE_SIZE,
            "maxWriteBatchSize": 100000,
            "localTime": datetime.datetime.now(datetime.timezone.utc),
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": conn.id,
            "minWireVersion": 0,
            "maxWireVersion": self.max_wire_version,
            "readOnly": False,
        }
        del d["topologyVersion"]  # no streaming hello: drivers poll
        if conn.compressors:
            d["compression"] = list(conn.compressors)
        d["ok"] = 1.0
        return d

    def _cmd_hello(self, conn, cmd, seqs, db):
        return self._hello(conn, cmd, legacy=False)

    def _cmd_ismaster(self, conn, cmd, seqs, db):
        return self._hello(conn, cmd, legacy=True)

    def _cmd_ping(self, conn, cmd, seqs, db):
        return {"ok": 1.0}

    def _cmd_buildinfo(self, conn, cmd, seqs, db):
        return {"version": "7.0.0", "versionArray": [7, 0, 0, 0], "maxBsonObjectSize": 16 * 1024 * 1024,
                "ok": 1.0}

    def _cmd_endsessions(self, conn, cmd, seqs, db):
        return {"ok": 1.0}

    def _cmd_listcollections(self, conn, cmd, seqs, db):
        with self._lock:
            names = [ns.split(".", 1)[1] for ns in self.store if ns.startswith(db + ".")]
        batch = [{"name": n, "type": "collection", "options": {}, "info": {"readOnly": False}} for n in names]
        return {"cursor": {"id": Int64(0), "ns": f"{db}.$cmd.listCollections", "firstBatch": batch}, "ok": 1.0}

    def _cmd_drop(self, conn, cmd, seqs, db):
        ns = f"{db}.{cmd['drop']}"
        with self._lock:
            existed = self.store.pop(ns, None) is not None
        if not existed:
            return {"ok": 0.0, "errmsg": "ns not found", "code": 26, "codeName": "NamespaceNotFound"}
        return {"ns": ns, "nIndexesWas": 1, "ok": 1.0}

    def _cmd_insert(self, conn, cmd, seqs, db):
        ns = f"{db}.{cmd['insert']}"
        docs = list(cmd.get("documents") or []) + list(seqs.get("documents") or [])
        n = 0
        errors = []
        with self._lock:
            coll = self.store.setdefault(ns, [])
            ids = {repr(d.get("_id")) for d in coll}
            for i, d in enumerate(docs):
                if repr(d.get("_id")) in ids:
                    errors.append({"index": i, "code": 11000, "errmsg": f"E11000 duplicate key error collection: {ns}"})
                    if cmd.get("ordered", True):
                        break
                    continue
                ids.add(repr(d.get("_id")))
                coll.append(d)
                n += 1
        out = {"n": n}
        if errors:
            out["writeErrors"] = errors
        out["ok"] = 1.0
        return out

    def _cmd_delete(self, conn, cmd, seqs, db):
        ns = f"{db}.{cmd['delete']}"
        stmts = list(cmd.get("deletes") or []) + list(seqs.get("deletes") or [])
        n = 0
        with self._lock:
            coll = self.store.setdefault(ns, [])
            for st in stmts:
                q, limit = st.get("q", {}), st.get("limit", 0)
                keep = []
                removed = 0
                for d in coll:
                    if _matches(d, q) and (limit == 0 or removed < limit):
                        removed += 1
                    else:
                        keep.append(d)
                coll[:] = keep
                n += removed
        return {"n": n, "ok": 1.0}

    def _cmd_count(self, conn, cmd, seqs, db):
        ns = f"{db}.{cmd['count']}"
        q = cmd.get("query") or {}
        with self._lock:
            n = sum(1 for d in self.store.get(ns, []) if _matches(d, q))
        return {"n": n, "ok": 1.0}

    def _cmd_aggregate(self, conn, cmd, seqs, db):
        """Only what count_documents needs: $match (equality), $skip, $limit, $group {_id, n: {$sum: 1}}."""
        ns = f"{db}.{cmd['aggregate']}"
        with self._lock:
            docs = list(self.store.get(ns, []))
        for stage in cmd.get("pipeline") or []:
            op, arg = next(iter(stage.items()))
            if op == "$match":
                docs = [d for d in docs if _matches(d, arg)]
            elif op == "$skip":
                docs = docs[int(arg):]
            elif op == "$limit":
                docs = docs[:int(arg)]
            elif op == "$group":
                out = {"_id": arg.get("_id")}
                for k, v in arg.items():
                    if k != "_id":
                        out[k] = len(docs) if v == {"$sum": 1} else None
                docs = [out] if docs else []
            else:
                return {"ok": 0.0, "errmsg": f"wire peer: unsupported stage {op}", "code": 168,
                        "codeName": "InvalidPipelineOperator"}
        bs = int((cmd.get("cursor") or {}).get("batchSize") or self.default_batch_size)
        return self._batch(0, ns, docs, bs, True)

    def _batch(self, cursor_id: int, ns: str, docs: list[dict], batch_size: int, first: bool) -> dict:
        batch, rest = docs[:batch_size], docs[batch_size:]
        if rest:
            with self._lock:
                if cursor_id == 0:
                    self._next_cursor += 1
                    cursor_id = self._next_cursor
                self.cursors[cursor_id] = (ns, rest)
        else:
            with self._lock:
                self.cursors.pop(cursor_id, None)
            cursor_id = 0
        key = "firstBatch" if first else "nextBatch"
        return {"cursor": {"id": Int64(cursor_id), "ns": ns, key: batch}, "ok": 1.0}

    def _cmd_find(self, conn, cmd, seqs, db):
        ns = f"{db}.{cmd['find']}"
        flt = cmd.get("filter") or {}
        with self._lock:
            docs = [d for d in self.store.get(ns, []) if _matches(d, flt)]
        skip = int(cmd.get("skip") or 0)
        docs = docs[skip:]
        limit = int(cmd.get("limit") or 0)
        if limit:
            docs = docs[:abs(limit)]
        bs = int(cmd.get("batchSize") or self.default_batch_size)
        if cmd.get("singleBatch"):
            docs = docs[:bs]
        return self._batch(0, ns, docs, bs, True)

    def _cmd_getmore(self, conn, cmd, seqs, db):
        cid = int(cmd["getMore"])
        with self._lock:
            entry = self.cursors.get(cid)
        if entry is None:
            return {"ok": 0.0, "errmsg": f"cursor id {cid} not found", "code": 43, "codeName": "CursorNotFound"}
        ns, rest = entry
        bs = int(cmd.get("batchSize") or self.default_batch_size)
        return self._batch(cid, ns, rest, bs, False)

    def _cmd_killcursors(self, conn, cmd, seqs, db):
        killed = []
        with self._lock:
            for c in cmd.get("cursors") or []:
                if self.cursors.pop(int(c), None) is not None:
                    killed.append(c)
        return {"cursorsKilled": killed, "cursorsNotFound": [], "cursorsAlive": [], "cursorsUnknown": [],
                "ok": 1.0}


# ---------------------------------------------------------------- raw client

class RawClient:
    """Hand-crafted bytes to a MongoDB-speaking server, frames back."""

    def __init__(self, host: str = "127.0.0.1", port: int = 27017, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout

    @classmethod
    def for_address(cls, address: str, timeout: float = 10.0) -> "RawClient":
        host, _, port = address.rpartition(":")
        return cls(host, int(port), timeout)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_message(self, timeout: float | None = None) -> Message | None:
        self.sock.settimeout(timeout or self.timeout)
        raw = read_frame(self.sock)
        return parse_message(raw) if raw is not None else None

    def command(self, body: dict, db: str = "admin", flags: int = 0, checksum: bool = False,
                compressor_id: int | None = None, sequences: dict | None = None) -> Message:
        body = dict(body)
        body.setdefault("$db", db)
        frame = encode_op_msg(body, flags=flags, checksum=checksum, sequences=sequences)
        if compressor_id is not None:
            frame = encode_compressed(frame, compressor_id)
        rid = struct.unpack_from("<i", frame, 4)[0]
        self.send(frame)
        reply = self.recv_message()
        if reply is None:
            raise ConnectionError("connection closed before a reply")
        assert reply.response_to == rid, (reply.response_to, rid)
        return reply

    def hello(self, compression: list[str] | None = None, legacy: bool = False) -> Message:
        if legacy:
            q = {"isMaster": 1, "helloOk": True, "client": {"driver": {"name": "raw", "version": "0"}}}
            if compression is not None:
                q["compression"] = compression
            frame = encode_op_query(q)
            self.send(frame)
            reply = self.recv_message()
            if reply is None:
                raise ConnectionError("connection closed before a reply")
            return reply
        body: dict[str, Any] = {"hello": 1, "client": {"driver": {"name": "raw", "version": "0"}}}
        if compression is not None:
            body["compression"] = compression
        return self.command(body)

    def drain(self, timeout: float = 5.0) -> tuple[bool, bytes]:
        """Reads until the other side closes or timeout passes with nothing more.
        Returns (closed, bytes received)."""
        self.sock.settimeout(timeout)
        got = bytearray()
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True, bytes(got)
                got += data
        except socket.timeout:
            return False, bytes(got)
        except OSError:
            return True, bytes(got)

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the other side closed (EOF or reset) within timeout; False if still open."""
        return self.drain(timeout)[0]

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
