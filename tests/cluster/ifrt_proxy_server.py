"""A stand-in for the Pathways IFRT proxy server, enough for a real `jax.devices()`.

jaxlib's IFRT proxy client (what `pathwaysutils.initialize()` registers as JAX's "proxy"
backend) talks gRPC to the service `xla.ifrt.proxy.GrpcIfrtService`. To list the devices it
makes two calls:

1. `GetVersion` (unary): a `GrpcGetVersionRequest` with the lowest and highest protocol and
   IFRT SerDes versions it speaks; the answer (`GrpcGetVersionResponse`) picks one of each.
2. `IfrtSession` (a bidirectional stream), opened with the chosen version in the binary
   metadata `ifrt-proxy-grpc-ifrt-session-metadata-bin`: its first `IfrtRequest` is an
   `init_request`, answered by an `IfrtResponse` whose `init_response` lists the platform, the
   devices and their memories.
   Every answer carries the request's `op_id` in its `response_metadata`.

The messages are encoded here by hand (protobuf's wire format: a key of field number and wire
type, then a varint, a fixed64 or a length-prefixed body). Their field numbers are those of the
descriptors compiled into jaxlib 0.10.2 (`jaxlib/libjax_common.so`, files
`xla/python/ifrt_proxy/common/grpc_ifrt_service.proto` and `ifrt_service.proto` of openxla/xla);
tests/jax/requirements.txt pins that jaxlib. Any other request on the session is answered with
an UNIMPLEMENTED status in its metadata, so a client that asks for more fails saying so.

Every call is recorded (method, peer, metadata, the decoded request) for the tests to assert on.
Run alone it serves until killed and prints each call as a JSON line:
    python3 ifrt_proxy_server.py [--port N] [--devices 16] [--kind "TPU v6 lite"]
"""

import argparse
import json
import struct
import threading
from concurrent import futures

import grpc

SERVICE = "xla.ifrt.proxy.GrpcIfrtService"
SESSION_METADATA = "ifrt-proxy-grpc-ifrt-session-metadata-bin"

# IfrtRequest / IfrtResponse fields (ifrt_service.proto).
REQUEST_METADATA, INIT = 1, 2
# absl::StatusCode / google.rpc.Code: UNIMPLEMENTED.
UNIMPLEMENTED = 12

# --- protobuf wire format ------------------------------------------------------------------

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


def _varint(n):
    n &= (1 << 64) - 1  # negative int32/int64 values go as ten-byte two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def varint_field(field, n):
    return _key(field, VARINT) + _varint(n) if n else b""


def fixed64_field(field, n):
    return _key(field, FIXED64) + struct.pack("<Q", n) if n else b""


def bytes_field(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, LEN) + _varint(len(data)) + data


def packed_varints(field, values):
    return bytes_field(field, b"".join(_varint(v) for v in values)) if values else b""


def _read_varint(data, i):
    n = shift = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, i


def decode(data):
    """{field number: [values]}: ints for varint and fixed fields, bytes for length-delimited."""
    fields, i = {}, 0
    while i < len(data):
        key, i = _read_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = _read_varint(data, i)
        elif wire == FIXED64:
            value, i = struct.unpack_from("<Q", data, i)[0], i + 8
        elif wire == FIXED32:
            value, i = struct.unpack_from("<I", data, i)[0], i + 4
        elif wire == LEN:
            n, i = _read_varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wire} of field {field}")
        fields.setdefault(field, []).append(value)
    return fields


def _first(fields, field, default=0):
    return fields.get(field, [default])[0]


# --- the messages --------------------------------------------------------------------------

def decode_version(data):
    """IfrtProxyVersion: protocol_version = 1, ifrt_serdes_version_number = 2 (int32)."""
    f = decode(data)
    return {"protocol_version": _first(f, 1), "ifrt_serdes_version_number": _first(f, 2)}


def encode_version(v):
    return varint_field(1, v["protocol_version"]) + varint_field(2, v["ifrt_serdes_version_number"])


def init_response(devices, kind, platform="tpu"):
    """InitResponse for `devices` devices of one process, each with one memory of its own."""
    body = varint_field(8, 1)  # session_id
    body += bytes_field(1, platform)  # platform_name
    body += bytes_field(2, "ifrt-proxy-stand-in")  # platform_version
    body += varint_field(3, 1)  # platform_id
    body += bytes_field(5, "proxy")  # runtime_type
    for d in range(devices):
        text = f"TpuDevice(id={d}, process_index=0, coords=({d % 4},{d // 4},0), core_on_chip=0)"
        # InitResponse.Device: id 1, local_hardware_id 2, device_kind 3, debug_string 4,
        # to_string 5, default_memory_id 7, memory_ids 8 (packed), local_device_id 9,
        # platform_name 11.
        device = (varint_field(1, d) + varint_field(2, d) + bytes_field(3, kind) +
                  bytes_field(4, text) + bytes_field(5, text) + _key(7, VARINT) + _varint(d) +
                  packed_varints(8, [d]) + varint_field(9, d) + bytes_field(11, platform))
        body += bytes_field(6, device)  # all_devices
    body += packed_varints(10, list(range(devices)))  # primary_device_ids: what devices() lists
    body += packed_varints(7, list(range(devices)))  # addressable_device_ids
    for d in range(devices):
        # InitResponse.Memory: id 1, memory_space_kind 2, device_ids 3 (packed), debug_string 4,
        # to_string 5, kind_id 6.
        memory = (_key(1, VARINT) + _varint(d) + bytes_field(2, "device") +
                  packed_varints(3, [d]) + bytes_field(4, f"TPU_{d}(device)") +
                  bytes_field(5, f"TPU_{d}(device)"))
        body += bytes_field(9, memory)  # memories
    return body


def response(op_id, field=None, body=b"", status=None):
    """IfrtResponse: response_metadata = 1 {op_id = 1 (fixed64), status = 2 {code = 1,
    message = 2}}, then the answer in `field`."""
    metadata = fixed64_field(1, op_id)
    if status:
        code, message = status
        metadata += bytes_field(2, varint_field(1, code) + bytes_field(2, message))
    out = bytes_field(1, metadata)
    if field is not None:
        out += bytes_field(field, body)
    return out


# --- the server ----------------------------------------------------------------------------

class IfrtProxyServer:
    """The stand-in on 127.0.0.1:`port` (0: any free port), `devices` devices of `kind`."""

    def __init__(self, port=0, devices=16, kind="TPU v6 lite", on_call=None):
        self.devices, self.kind = devices, kind
        self.calls = []
        self._lock = threading.Lock()
        self._on_call = on_call
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handlers = {
            "GetVersion": grpc.unary_unary_rpc_method_handler(self._get_version),
            "IfrtSession": grpc.stream_stream_rpc_method_handler(self._session),
        }
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),))
        self.port = self._server.add_insecure_port(f"127.0.0.1:{port}")
        self._server.start()

    def _record(self, method, context, request):
        call = {"method": f"/{SERVICE}/{method}", "peer": context.peer(),
                "metadata": sorted(k for k, _ in context.invocation_metadata()),
                "request": request}
        with self._lock:
            self.calls.append(call)
        if self._on_call:
            self._on_call(call)

    def methods(self):
        with self._lock:
            return [c["method"] for c in self.calls]

    def _get_version(self, request, context):
        f = decode(request)
        low = decode_version(_first(f, 1, b""))
        high = decode_version(_first(f, 2, b""))
        self._record("GetVersion", context, {"min_version": low, "max_version": high})
        # The newest the client speaks: a real server answers with the newest both speak.
        return bytes_field(1, encode_version(high))

    def _session(self, requests, context):
        metadata = dict(context.invocation_metadata())
        version = decode_version(_first(decode(metadata.get(SESSION_METADATA, b"")), 1, b""))
        for raw in requests:
            f = decode(raw)
            op_id = _first(decode(_first(f, REQUEST_METADATA, b"")), 1)
            kinds = sorted(k for k in f if k != REQUEST_METADATA)
            self._record("IfrtSession", context,
                         {"op_id": op_id, "fields": kinds, "session_version": version})
            if kinds == [INIT]:
                yield response(op_id, INIT, init_response(self.devices, self.kind))
            else:
                yield response(op_id, status=(
                    UNIMPLEMENTED, f"the test server answers only init_request, not field "
                                   f"{kinds} of IfrtRequest"))

    def wait(self):
        self._server.wait_for_termination()

    def close(self):
        self._server.stop(grace=None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--devices", type=int, default=16)
    parser.add_argument("--kind", default="TPU v6 lite")
    args = parser.parse_args()

    def show(call):
        print(json.dumps(call, default=repr), flush=True)

    server = IfrtProxyServer(args.port, args.devices, args.kind, on_call=show)
    print(json.dumps({"port": server.port}), flush=True)
    server.wait()


if __name__ == "__main__":
    main()
