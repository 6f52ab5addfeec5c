"""Real-client conformance: p4runtime-shell (PyPI p4runtime-shell) against efb-target.

Connects as primary (election id 20), takes the P4Info from the target, reads the IPv4
flow entries a test wrote, writes one flow entry of its own (by the names' shortest unique
suffixes, as a person at the shell would), and prints what it saw as JSON.
Usage: python p4runtime_shell_client.py HOST:PORT
"""

import json
import os
import sys

import p4runtime_sh.shell as sh
from p4runtime_sh.context import P4Type

# The IPv4 flow table ("flows" alone names three tables).
FLOWS = "flows_ipv4.flows"


def main(addr):
    # Not verbose=False: in p4runtime-shell 0.0.6 the options "verbose" and
    # "canonical_bytestrings" are the same enum member, so turning verbosity off also
    # turns canonical byte strings off (and a strict target refuses the padded ones).
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 20))
    try:
        out = {"tables": sorted(name for name, _ in sh.context.get_objs(P4Type.table))}
        flows = []
        for te in sh.TableEntry(FLOWS).read():
            msg = te.msg()
            flows.append({
                "priority": msg.priority,
                "action": sh.context.get_name_from_id(msg.action.action.action_id),
                "fields": sorted(sh.context.get_mf_name(FLOWS, m.field_id) for m in msg.match),
            })
        out["flows"] = flows
        te = sh.TableEntry(FLOWS)(action="flows_ipv4.drop")
        te.match["frame_class"] = "2&&&0xff"
        te.match["l4_dst_port"] = "9&&&0xffff"
        te.match["ip_proto"] = "17&&&0xff"
        te.priority = 500
        te.insert()
        out["inserted"] = True
        try:
            te.insert()
            out["duplicate"] = "accepted"
        except Exception as e:  # the shell raises P4RuntimeWriteException
            out["duplicate"] = str(e)
        print(json.dumps(out))
    finally:
        sh.teardown()


if __name__ == "__main__":
    main(sys.argv[1])
    # grpcio's daemon threads may be stopped at interpreter exit holding a call's lock, and
    # the exit's garbage collection then waits for it for ever: end here, output flushed.
    sys.stdout.flush()
    os._exit(0)
