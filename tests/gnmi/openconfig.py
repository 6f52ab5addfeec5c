"""pygnmi reads OpenConfig interfaces: from the chip's own gNMI (efb-target, as a Stratum
switch serves its ports: plain text, no users) and from efbd's (origin openconfig, beside
the balancer's model). Run by tests/openconfig.rs; one line per check, non-zero exit at the
first failure.

Usage: python openconfig.py chip --gnmi HOST:PORT
       python openconfig.py box --gnmi HOST:PORT --cert PEM --port NAME --free NAME
       python openconfig.py link --gnmi HOST:PORT --cert PEM --link NAME
(link: prints "ready" once subscribed; the test then pulls a cable of the link, and puts it
back when "down" is printed.)
"""

import argparse
import time

from pygnmi.client import gNMIclient

from ending import finish

ARGS = None


def check(condition, what, detail=""):
    if not condition:
        print(f"FAIL {what}: {detail}", flush=True)
        finish(1)
    print(f"ok   {what}", flush=True)



def flatten(path, value, out):
    """A subtree's leaves under their paths, module prefixes dropped from member names."""
    if isinstance(value, dict):
        for member, v in value.items():
            flatten(f"{path}/{member.split(':')[-1]}", v, out)
    else:
        out[path] = value


def values(reply):
    """{path: value} of a Get reply or a subscription message, objects read leaf by leaf."""
    out = {}
    notifications = reply.get("notification") or [reply.get("update", {})]
    for n in notifications:
        for u in n.get("update", []):
            flatten(u["path"], u.get("val"), out)
    return out


def one_object(reply, member):
    """The reply is one update holding an object whose top members carry their module."""
    updates = [u for n in reply.get("notification", []) for u in n.get("update", [])]
    return (len(updates) == 1 and isinstance(updates[0].get("val"), dict)
            and member in updates[0]["val"])


def ending(vals, suffix):
    """The values of {path: value} whose path ends with suffix."""
    return [v for p, v in vals.items() if p.endswith(suffix)]


def leaf(reply, suffix):
    found = [v for p, v in values(reply).items() if p.endswith(suffix)]
    return found[0] if len(found) == 1 else found


def wait_update(sub, timeout, what):
    try:
        return sub.get_update(timeout=timeout)
    except TimeoutError:
        check(False, what, f"nothing within {timeout} s")


def refused(call, what, words):
    try:
        call()
    except Exception as e:  # pygnmi wraps grpc errors in its own exceptions
        check(words in str(e), what, str(e))
        return
    check(False, what, "accepted")


def connect(**extra):
    host, port = ARGS.gnmi.rsplit(":", 1)
    return gNMIclient(target=(host, int(port)), gnmi_timeout=10, **extra)


def chip():
    iface = "/interfaces/interface[name=p1-0]"
    with connect(insecure=True) as gc:
        caps = gc.capabilities()
        versions = {m["name"]: m["version"] for m in caps["supported_models"]}
        check(versions == {"openconfig-interfaces": "3.8.0", "openconfig-if-ethernet": "2.16.0"},
              "capabilities: the OpenConfig interfaces models with their openconfig-version", caps)

        got = gc.get(path=[f"{iface}/state"], encoding="json_ietf")
        check(one_object(got, "openconfig-interfaces:oper-status"),
              "get: a container is one RFC 7951 object, module-qualified at the top", got)
        check(leaf(got, "state/oper-status") == "UP", "get: p1-0 is up", got)
        check(leaf(got, "state/ifindex") == 132, "get: ifindex is the device port (132)", got)
        check(int(leaf(got, "counters/in-pkts")) >= 0, "get: counters as RFC 7951 strings", got)

        everyone = gc.get(path=["/interfaces/interface[name=*]/state/oper-status"], encoding="json")
        check(len(values(everyone)) == 128, "get: one interface per lane of the 32 ports",
              len(values(everyone)))

        watched = "/interfaces/interface[name=p1-1]/state/oper-status"
        stream = {"subscription": [{"path": watched, "mode": "on_change"}],
                  "mode": "stream", "encoding": "json_ietf"}
        sub = gc.subscribe_stream(subscribe=stream)
        first = wait_update(sub, 10, "on_change: initial value")
        if not first.get("sync_response"):
            check(list(values(first).values()) == ["UP"], "on_change: initial value UP", first)
            wait_update(sub, 5, "on_change: sync_response")
        started = time.monotonic()
        with connect(insecure=True) as other:
            other.set(update=[("/interfaces/interface[name=p1-1]/config/enabled", False)],
                      encoding="json_ietf")
        down = wait_update(sub, 5, "on_change: admin down arrives")
        check(list(values(down).values()) == ["DOWN"],
              f"on_change: DOWN within {time.monotonic() - started:.2f} s", down)
        sub.close()

        got = gc.get(path=["/interfaces/interface[name=p1-1]/state"], encoding="json_ietf")
        check(leaf(got, "admin-status") == "DOWN" and leaf(got, "oper-status") == "DOWN",
              "set config/enabled false: admin- and oper-status DOWN", got)
        check(leaf(got, "carrier-transitions") == "1", "carrier-transitions counted", got)
        gc.set(update=[("/interfaces/interface[name=p1-1]/config",
                        {"openconfig-interfaces:enabled": True})], encoding="json_ietf")
        got = gc.get(path=[watched], encoding="json_ietf")
        check(leaf(got, "oper-status") == "UP", "set of config as an object: up again", got)

        sample = {"subscription": [{"path": f"{iface}/state/counters/out-pkts", "mode": "sample",
                                    "sample_interval": 200_000_000}],
                  "mode": "stream", "encoding": "json_ietf"}
        sub = gc.subscribe_stream(subscribe=sample)
        seen = 0
        deadline = time.monotonic() + 5
        while seen < 4 and time.monotonic() < deadline:
            m = wait_update(sub, 2, "sample: the next sample")
            seen += len(values(m))
        sub.close()
        check(seen >= 3, f"sample at 200 ms: {seen} samples", seen)

        refused(lambda: gc.get(path=["/interfaces/interface[name=p1-0]/state/nonsense"], encoding="json_ietf"),
                "get of an unserved leaf: refused saying what is served", "oper-status")
        refused(lambda: gc.get(path=["/interfaces/interface[name=p99]/state"], encoding="json_ietf"),
                "get of an interface the chip lacks: not found", "no interface")
        refused(lambda: gc.set(update=[("/interfaces/interface[name=p1-0]/state/oper-status", "DOWN")],
                               encoding="json_ietf"),
                "set of a state leaf: refused naming what may be set", "config/enabled")
    print("done", flush=True)


def box():
    with connect(username="admin", password="admin", path_cert=ARGS.cert) as gc:
        caps = gc.capabilities()
        names = {m["name"] for m in caps["supported_models"]}
        check({"ecofilter-balancer", "openconfig-interfaces"} <= names,
              "capabilities: the balancer's model and OpenConfig interfaces", caps)

        port = f"openconfig:interfaces/interface[name={ARGS.port}]"
        got = gc.get(path=[f"{port}/state"], encoding="json_ietf")
        check(one_object(got, "openconfig-interfaces:counters"),
              "get: a container is one RFC 7951 object, module-qualified at the top", got)
        check(leaf(got, "state/oper-status") == "UP", f"get: {ARGS.port} up", got)
        check(int(leaf(got, "counters/in-pkts")) >= 10, f"get: {ARGS.port} counted the frames sent in", got)
        got = gc.get(path=[f"{port}/ethernet/state/port-speed"], encoding="json_ietf")
        check(leaf(got, "port-speed") == "openconfig-if-ethernet:SPEED_100GB",
              "get: the configured speed as an identity", got)

        free = gc.get(path=[f"/interfaces/interface[name={ARGS.free}]/state/name"], encoding="json")
        check(leaf(free, "state/name") == ARGS.free, "get without origin: a free port by its board name", free)

        once = {"subscription": [{"path": "openconfig:interfaces/interface[name=*]/state/oper-status"}],
                "mode": "once", "encoding": "json_ietf"}
        got = list(gc.subscribe_once(subscribe=once))
        statuses = {}
        for m in got:
            statuses.update(values(m))
        check(got[-1].get("sync_response") and len(statuses) >= 32,
              f"once: {len(statuses)} interfaces' oper-status, then sync", len(statuses))

        refused(lambda: gc.set(update=[(f"{port}/config/enabled", False)], encoding="json_ietf"),
                "set of an OpenConfig path: read-only, configure in the balancer's model", "read-only")
        refused(lambda: gc.get(path=[f"{port}/state", "ecofilter-balancer:ports"], encoding="json_ietf"),
                "one request, two origins: refused", "not both")
    print("done", flush=True)


def link():
    """A link's status as a collector follows it: ON_CHANGE on the balancer's model."""
    with connect(username="viewer", password="viewer", path_cert=ARGS.cert) as gc:
        state = f"ecofilter-balancer:ecofilter-balancer/link[name={ARGS.link}]/state"
        stream = {"subscription": [{"path": state, "mode": "on_change"}],
                  "mode": "stream", "encoding": "json_ietf"}
        sub = gc.subscribe_stream(subscribe=stream)
        seen = {}
        while True:
            m = wait_update(sub, 10, "on_change: initial values and sync")
            seen.update(values(m))
            if m.get("sync_response"):
                break
        check(ending(seen, "state/status") == ["up"], f"on_change: link {ARGS.link} up at first", seen)
        print("ready", flush=True)
        for status, why in (("down", "down"), ("up", None)):
            started = time.monotonic()
            changed = {}
            while not any(p.endswith("state/status") for p in changed):
                m = wait_update(sub, 10, f"on_change: the link going {status}")
                changed.update(values(m))
            took = time.monotonic() - started
            check(ending(changed, "state/status") == [status],
                  f"on_change: link {ARGS.link} {status} within {took:.2f} s", changed)
            if why:
                reason = ending(changed, "state/reason")
                check(reason and why in reason[0], f"on_change: the reason names the port ({reason})", changed)
            print(status, flush=True)
        sub.close()
    print("done", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["chip", "box", "link"])
    parser.add_argument("--gnmi", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--port")
    parser.add_argument("--free")
    parser.add_argument("--link")
    ARGS = parser.parse_args()
    {"chip": chip, "box": box, "link": link}[ARGS.scenario]()
    finish(0)
