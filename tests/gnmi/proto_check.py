"""Checks proto/gnmi and proto/gnmi_ext against the definitions of the gnmi-pb package
(compiled from openconfig/gnmi): every message, field (name, number, type, label, oneof),
enum value, reserved range and the gNMI service version must be the same. Comments and
import paths may differ. Prints one line per difference; exit status 1 if there is any.

Usage: python proto_check.py PROTO_DIR
"""

import sys
import tempfile

from google.protobuf import descriptor_pb2
from grpc_tools import protoc
import grpc_tools
import os

import gnmi_pb.gnmi_ext_pb2 as upstream_ext
import gnmi_pb.gnmi_pb2 as upstream


def ours(proto_dir):
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        status = protoc.main(
            [
                "protoc",
                f"-I{proto_dir}",
                f"-I{include}",
                f"--descriptor_set_out={out}",
                "gnmi/gnmi.proto",
                "gnmi_ext/gnmi_ext.proto",
            ]
        )
        if status != 0:
            sys.exit(f"protoc failed on {proto_dir}")
        files = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            files.ParseFromString(f.read())
    return {f.package: f for f in files.file}


def upstream_file(module):
    fd = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fd)
    return fd


def shape(fd):
    """Everything that matters on the wire or for names, as comparable tuples."""
    lines = set()

    def message(m, scope):
        name = f"{scope}.{m.name}"
        lines.add(("message", name, m.options.deprecated, m.options.map_entry))
        for r in m.reserved_range:
            lines.add(("reserved", name, r.start, r.end))
        for r in m.reserved_name:
            lines.add(("reserved-name", name, r))
        for f in m.field:
            oneof = m.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else ""
            lines.add(
                ("field", name, f.name, f.number, f.type, f.label, f.type_name, oneof,
                 f.options.deprecated)
            )
        for e in m.enum_type:
            enum(e, name)
        for n in m.nested_type:
            message(n, name)

    def enum(e, scope):
        for v in e.value:
            lines.add(("enum", f"{scope}.{e.name}", v.name, v.number))

    for m in fd.message_type:
        message(m, fd.package)
    for e in fd.enum_type:
        enum(e, fd.package)
    for s in fd.service:
        for m in s.method:
            lines.add(("rpc", s.name, m.name, m.input_type, m.output_type,
                       m.client_streaming, m.server_streaming))
    for x in fd.extension:
        lines.add(("extension", x.name, x.number, x.extendee, x.type))
    return lines


def version(fd):
    text = str(fd.options)
    for line in text.splitlines():
        if "gnmi_service" in line or line.startswith("1001:"):
            return line.split(":", 1)[1].strip().strip('"')
    return None


def main():
    mine = ours(sys.argv[1])
    differences = 0
    for package, module in (("gnmi", upstream), ("gnmi_ext", upstream_ext)):
        theirs = shape(upstream_file(module))
        have = shape(mine[package])
        for line in sorted(theirs - have, key=str):
            print("missing:", line)
            differences += 1
        for line in sorted(have - theirs, key=str):
            print("extra:  ", line)
            differences += 1
    theirs_version = version(upstream_file(upstream))
    print(f"gNMI service version: ours {version(mine['gnmi'])}, gnmi-pb {theirs_version}")
    if version(mine["gnmi"]) != theirs_version:
        differences += 1
    sys.exit(1 if differences else 0)


main()
