"""Real gNMI clients against a real efbd: pygnmi for Capabilities, Get, Set and Subscribe,
grpcio with the gnmi-pb definitions for what pygnmi cannot send (the commit confirmed
extension, gzip). Run by tests/gnmi.rs; each scenario prints one line per check and exits
non-zero at the first failure.

Usage: python clients.py SCENARIO --gnmi HOST:PORT --mgmt HOST:PORT --cli EFB-CLI
                         [--cert PEM] (TLS with that certificate; plain text without)
Scenarios: read_write, subscribe, auth, confirmed, bad_values, targets, timestamps, defaults,
           typed_values, missing_keys, unknown_paths, conformance, proto, rollback_duration, reflection

pygnmi sends a Python string in json_val / json_ietf_val as it is, unquoted: a string leaf's
value is given as JSON text, json.dumps("uplink A"), as the gNMI specification asks.
"""

import argparse
import json
import subprocess
import threading
import time

import grpc

from ending import finish

# pygnmi and gnmi-pb each register a gnmi_ext.proto of their own in protobuf's default
# pool: a process uses one or the other, so pygnmi is imported only where it is used.

ARGS = None
MODULE = "ecofilter-balancer"


def check(condition, what, detail=""):
    if not condition:
        print(f"FAIL {what}: {detail}", flush=True)
        finish(1)
    print(f"ok   {what}", flush=True)


def client(user="admin", password=None):
    from pygnmi.client import gNMIclient

    host, port = ARGS.gnmi.rsplit(":", 1)
    options = dict(
        target=(host, int(port)),
        username=user,
        password=user if password is None else password,
        gnmi_timeout=10,
    )
    if ARGS.cert:
        options["path_cert"] = ARGS.cert
    else:
        options["insecure"] = True
    return gNMIclient(**options)


def shell(lines):
    """Runs set/delete lines and a commit through the shell, as an engineer would."""
    out = subprocess.run(
        [ARGS.cli, "--connect", ARGS.mgmt, "--user", "engineer"],
        input="\n".join(lines) + "\ncommit\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    if out.returncode != 0:
        print(f"FAIL shell {lines}: {out.stdout} {out.stderr}", flush=True)
        finish(1)


def values(response):
    """{path: value} of every update of a Get response (or a coalesced subscription)."""
    found = {}
    for n in response.get("notification", [response]):
        for u in n.get("update", []) or []:
            found[u["path"]] = u["val"]
    return found


def get(gc, path, **kw):
    return values(gc.get(path=[path], **kw))


def code_of(exc):
    """The gRPC status code behind a pygnmi exception (or a grpc error)."""
    if isinstance(exc, grpc.RpcError):
        return exc.code()
    orig = getattr(exc, "orig_exc", None) or (exc.args[1] if len(exc.args) > 1 else None)
    if isinstance(orig, grpc.RpcError):
        return orig.code()
    return None


def refused(call, code, what):
    """Checks that `call` fails with `code`; returns the error's text."""
    from pygnmi.client import gNMIException

    try:
        call()
    except (gNMIException, grpc.RpcError) as exc:
        check(code_of(exc) == code, what, f"{code_of(exc)} {exc}")
        return str(exc)
    check(False, what, "was accepted")


# ----- Capabilities, Get, Set -----

def read_write():
    with client() as gc:
        caps = gc.capabilities()
        model = caps["supported_models"][0]
        check(model["name"] == MODULE and model["version"] == "2026-12-06" and model["organization"],
              "capabilities: the model, its organization and revision", caps)
        others = {m["name"]: (m["version"], m["organization"]) for m in caps["supported_models"][1:]}
        check(others == {"openconfig-interfaces": ("3.8.0", "OpenConfig working group"),
                         "openconfig-if-ethernet": ("2.16.0", "OpenConfig working group")},
              "capabilities: then the OpenConfig interfaces models (the ports for collectors), "
              "with their organization and openconfig-version", caps)
        check({"json", "json_ietf"} <= set(caps["supported_encodings"]), "capabilities: JSON and JSON_IETF", caps)
        check(caps["gnmi_version"] == "0.10.0", "capabilities: gNMI version 0.10.0", caps)

        whole = gc.get(path=["/"], datatype="config", encoding="json_ietf")
        root = values(whole)
        top = root.get("") or next(iter(root.values()))
        check(f"{MODULE}:ports" in top and f"{MODULE}:ecofilter-balancer" in top,
              "get config of everything: module-qualified top nodes (JSON_IETF)", list(top))
        check(whole["notification"][0]["timestamp"] > 1_600_000_000 * 10**9, "timestamps in nanoseconds")
        check("balancing-config-hash" not in json.dumps(top), "config leaves state out")

        state = get(gc, f"{MODULE}:ecofilter-balancer", datatype="state")
        text = json.dumps(state)
        check("balancing-config-hash" in text and "bypass-mode" in text and "priority" not in text,
              "get state: state only (hash, bypass mode), no configuration", text[:300])

        leaf = get(gc, "/ports/port[name=p1]/description", datatype="config")
        check(list(leaf.values()) == ["link l1 WAN (to the internet)"], "get of a single leaf", leaf)
        default = get(gc, "/ports/port[name=p1]/mtu")
        check(list(default.values()) == [9000], "a leaf left at its default reads as the default", default)

        wild = get(gc, "/ports/port[name=*]/speed")
        check(len(wild) == 20 and set(wild.values()) == {"100g", "10g"}, "wildcard keys: one update per port", wild)

        refused(lambda: gc.get(path=["/ports/prot"]), grpc.StatusCode.NOT_FOUND,
                "a path the model does not have: NOT_FOUND")
        refused(lambda: gc.get(path=["/ports/port[name=nope]"]), grpc.StatusCode.NOT_FOUND, "missing entry: NOT_FOUND")

        # replace resets what the value leaves out (mtu 9216 -> default, description gone)
        before = get(gc, "/ports/port[name=p9-0]")
        check(list(before.values())[0]["mtu"] == 9216, "the example's p9-0 has mtu 9216", before)
        r = gc.set(replace=[("ecofilter-balancer:ports/port[name=p9-0]", {"number": 9, "lane": 0, "speed": "10g"})])
        check(r["response"][0]["op"] == "REPLACE", "set replace: one REPLACE result", r)
        after = list(get(gc, "/ports/port[name=p9-0]").values())[0]
        check(after.get("mtu") == 9000 and "description" not in after and after["speed"] == "10g",
              "replace resets omitted leaves to their defaults", after)
        check(list(get(gc, "/ports/port[name=p9-0]/mtu").values()) == [9000], "mtu reads its default now")

        r = gc.set(update=[("/ports/port[name=p1]/description", json.dumps("uplink A"))], encoding="json_ietf")
        check(r["response"][0]["op"] == "UPDATE", "set update: one UPDATE result", r)
        check(list(get(gc, "/ports/port[name=p1]/description").values()) == ["uplink A"], "set update of a leaf")

        gc.set(update=[("/ecofilter-balancer/flow[name=bgp-to]/links", ["l1"])])
        gc.set(update=[("/ecofilter-balancer/flow[name=bgp-to]/links", ["l2"])])
        links = list(get(gc, "/ecofilter-balancer/flow[name=bgp-to]/links").values())[0]
        check(links == ["l1", "l2"], "leaf-list update appends", links)

        r = gc.set(delete=["/ecofilter-balancer/flow[name=multicast-v4]"])
        check(r["response"][0]["op"] == "DELETE", "set delete: one DELETE result", r)
        refused(lambda: gc.get(path=["/ecofilter-balancer/flow[name=multicast-v4]"]), grpc.StatusCode.NOT_FOUND,
                "the deleted flow is gone")
        r = gc.set(delete=["/ecofilter-balancer/flow[name=never-was]"])
        check(r["response"][0]["op"] == "DELETE", "deleting a path that does not exist succeeds", r)

        # one transaction: a valid update and an invalid one -> nothing changes
        config = values(gc.get(path=["/"], datatype="config"))
        refused(lambda: gc.set(update=[
            ("/ports/port[name=p1]/description", json.dumps("should not stay")),
            ("/ecofilter-balancer/ecofilter-unit[name=ef1]/liveness-profile", json.dumps("no-such-profile")),
        ]), grpc.StatusCode.INVALID_ARGUMENT, "a set that fails validation is refused")
        check(values(gc.get(path=["/"], datatype="config")) == config, "... and nothing changed")
        refused(lambda: gc.set(update=[("/ports/port[name=p1]/mtu", json.dumps("huge"))]),
                grpc.StatusCode.INVALID_ARGUMENT, "a value of the wrong type: INVALID_ARGUMENT")
        refused(lambda: gc.set(update=[("/ports/port[name=p1]/state/oper-status", json.dumps("up"))]),
                grpc.StatusCode.INVALID_ARGUMENT, "state cannot be set")

        # subtree update in plain JSON, gnmic-style path (module-qualified first element)
        gc.set(update=[(f"/{MODULE}:liveness", {"profile": [{"name": "fast", "interval": 50}]})], encoding="json")
        check(list(get(gc, "/liveness/profile[name=fast]/interval").values()) == [50], "subtree update in JSON")


# ----- values that are not one JSON value -----

def bad_values():
    """pygnmi sends a str as its bytes: each of these reaches efbd as it is written here."""
    description = "/ports/port[name=p1]/description"
    speed = "/ports/port[name=p1]/speed"
    cases = [
        (description, "{{{", "not valid JSON", "a string"),
        (description, "", "the input is empty", "a string"),
        (description, '"x" garbage', "trailing characters", "a string"),
        (description, '"\\ud800"', "not valid JSON", "a string"),
        (description, "uplink to the core", "not valid JSON", "a string"),
        (speed, "40g", "not valid JSON", "100g"),
        ("/ports/port[name=p1]", '{"mtu": 9000, "mtu": 1500}', 'member "mtu" appears twice', "one JSON value"),
    ]
    with client() as gc:
        config = values(gc.get(path=["/"], datatype="config"))
        for encoding in ("json_ietf", "json"):
            for path, raw, why, accepted in cases:
                what = f"{encoding} {raw!r} at {path}"
                text = refused(lambda: gc.set(update=[(path, raw)], encoding=encoding),
                               grpc.StatusCode.INVALID_ARGUMENT, f"{what}: INVALID_ARGUMENT")
                named = "port[name='p1']" in text and path.rsplit("/", 1)[-1].split("[")[0] in text
                check(named and why in text and accepted in text and "one JSON value" in text,
                      f"{what}: the path, the reason and what is accepted", text)
        check(values(gc.get(path=["/"], datatype="config")) == config, "refused values stored nothing")
        gc.set(update=[(description, json.dumps("uplink to the core"))], encoding="json_ietf")
        check(list(get(gc, description).values()) == ["uplink to the core"], "the same text as JSON is taken")


# ----- Subscribe -----

def wait_update(sub, timeout, what):
    try:
        return sub.get_update(timeout=timeout)
    except TimeoutError:
        check(False, what, f"nothing within {timeout} s")


def updates_of(message):
    return {u["path"]: u.get("val") for u in message.get("update", {}).get("update", [])}


def deletes_of(message):
    return message.get("update", {}).get("delete", [])


def stream_request(path, mode="on_change", **extra):
    sub = {"path": path, "mode": mode}
    sub.update(extra)
    return {"subscription": [sub], "mode": "stream", "encoding": "json_ietf"}


class closing:
    """pygnmi's subscribers have close() but are no context managers."""

    def __init__(self, sub):
        self.sub = sub

    def __enter__(self):
        return self.sub

    def __exit__(self, *exc):
        self.sub.close()


def subscribe():
    with client() as gc:
        path = "ecofilter-balancer:ports/port[name=p1]/description"
        with closing(gc.subscribe_stream(subscribe=stream_request(path))) as sub:
            first = wait_update(sub, 10, "stream: initial values and sync")
            check(first.get("sync_response") and
                  list(updates_of(first).values()) == ["link l1 WAN (to the internet)"],
                  "stream on_change: initial value, then sync_response", first)
            started = time.monotonic()
            shell(['set ports port p1 description "changed from the shell"'])
            change = wait_update(sub, 5, "stream: the shell's change")
            took = time.monotonic() - started
            check(list(updates_of(change).values()) == ["changed from the shell"], "on_change: the new value", change)
            check(took < 1.0, f"on_change: a change from the shell arrives within 1 s ({took:.2f} s with the shell)")
            shell(["delete ports port p1 description"])
            gone = wait_update(sub, 5, "stream: the delete")
            check(any("description" in d["path"] for d in deletes_of(gone)), "on_change: deletes are reported", gone)
            check(not sub.peek(), "sync_response came once; nothing else queued")

        sample = stream_request("/ports/port[name=p2]/speed", mode="sample", sample_interval=1_000_000_000)
        with closing(gc.subscribe_stream(subscribe=sample)) as sub:
            wait_update(sub, 10, "sample: initial")
            stamps = []
            for _ in range(3):
                m = wait_update(sub, 3, "sample: next sample")
                check(list(updates_of(m).values()) == ["100g"], "sample: the value every interval", m)
                stamps.append(m["update"]["timestamp"])
            gaps = [(b - a) / 1e9 for a, b in zip(stamps, stamps[1:])]
            check(all(0.8 < g < 1.3 for g in gaps), f"sample at 1 s: gaps {[round(g, 2) for g in gaps]}")

        quiet = stream_request("/ports/port[name=p2]", mode="sample", sample_interval=200_000_000,
                               suppress_redundant=True)
        with closing(gc.subscribe_stream(subscribe=quiet)) as sub:
            wait_update(sub, 10, "suppress_redundant: initial")
            time.sleep(0.7)
            check(not sub.peek(), "suppress_redundant: no samples while nothing changes")
            shell(['set ports port p2 description "p2 changed"'])
            m = wait_update(sub, 3, "suppress_redundant: the change")
            check(list(updates_of(m).values()) == ["p2 changed"], "suppress_redundant: only the changed leaf", m)

        poll = {"subscription": [{"path": "/ports/port[name=p3]/description"}], "mode": "poll", "encoding": "json"}
        with closing(gc.subscribe_poll(subscribe=poll)) as sub:
            first = sub.get_update(timeout=10)
            check(first.get("sync_response") and "link l2 WAN" in json.dumps(first), "poll: values, then sync", first)
            shell(['set ports port p3 description "polled"'])
            seen = [sub.get_update(timeout=10) for _ in range(2)]
            check("polled" in json.dumps(seen[-1]), "poll: each poll answers with current values", seen)

        once = {"subscription": [{"path": "/ports/port[name=p4]"}], "mode": "once", "encoding": "json_ietf"}
        with closing(gc.subscribe_once(subscribe=once)) as sub:
            got = list(sub)
            check(got[-1].get("sync_response") and "p4" in json.dumps(got[0]), "once: values, sync, end", got)

        # updates_only: the sync first, then changes only
        only = stream_request("/ports/port[name=p4]/description")
        only["updates_only"] = True
        with closing(gc.subscribe_stream(subscribe=only)) as sub:
            first = wait_update(sub, 10, "updates_only: sync")
            check(first.get("sync_response") and not updates_of(first), "updates_only: sync without values", first)

        # pygnmi's subscribe() sends its request and closes its side: the stream goes on
        stream = gc.subscribe(subscribe=stream_request("/ports/port[name=p4]/description"))
        messages = []

        def read():
            for m in stream:
                messages.append(m)
                if len(messages) >= 3:
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        deadline = time.monotonic() + 10
        while len(messages) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        check(len(messages) >= 2 and messages[1].HasField("sync_response"), "half-closed stream: initial sync")
        shell(['set ports port p4 description "after half-close"'])
        reader.join(5)
        check(len(messages) >= 3 and "after half-close" in str(messages[2]),
              "half-closed stream stays open and gets the change", messages[2:] if len(messages) > 2 else messages)
        stream.cancel()


# ----- Security -----

def auth():
    from pygnmi.client import gNMIException

    try:
        with client(user="", password="") as gc:
            gc.capabilities()
        check(False, "no credentials", "was accepted")
    except gNMIException as exc:
        check("UNAUTHENTICATED" in str(exc) or code_of(exc) == grpc.StatusCode.UNAUTHENTICATED,
              "no credentials: UNAUTHENTICATED", exc)
    try:
        with client(user="admin", password="wrong") as gc:
            gc.capabilities()
        check(False, "wrong password", "was accepted")
    except gNMIException as exc:
        check("UNAUTHENTICATED" in str(exc) or code_of(exc) == grpc.StatusCode.UNAUTHENTICATED,
              "wrong password: UNAUTHENTICATED", exc)
    with client() as admin:
        config = values(admin.get(path=["/"], datatype="config"))
    for role in ("viewer", "operator"):
        with client(user=role) as gc:
            check(list(get(gc, "/ports/port[name=p1]/speed").values()) == ["100g"], f"{role}: Get")
            with closing(gc.subscribe_once(subscribe={"subscription": [{"path": "/ports/port[name=p1]/speed"}],
                                              "mode": "once"})) as sub:
                check(list(sub)[-1].get("sync_response"), f"{role}: Subscribe")
            refused(lambda: gc.set(update=[("/ports/port[name=p1]/description", json.dumps("by " + role))]),
                    grpc.StatusCode.PERMISSION_DENIED, f"{role}: Set is PERMISSION_DENIED")
    with client() as admin:
        check(values(admin.get(path=["/"], datatype="config")) == config, "refused Sets changed nothing")


# ----- commit confirmed (gnmi-pb + grpcio: pygnmi cannot send extensions) -----

def confirmed():
    from gnmi_pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc
    from google.protobuf import duration_pb2

    if ARGS.cert:
        with open(ARGS.cert, "rb") as f:
            channel = grpc.secure_channel(ARGS.gnmi, grpc.ssl_channel_credentials(f.read()))
    else:
        channel = grpc.insecure_channel(ARGS.gnmi)
    stub = gnmi_pb2_grpc.gNMIStub(channel)
    md = [("username", "admin"), ("password", "admin")]

    def path(*names, **keys):
        elems = [gnmi_pb2.PathElem(name=n) for n in names]
        for k, v in keys.items():
            elems[-2 if names[-1] != "port" else -1].key[k] = v
        return gnmi_pb2.Path(elem=elems)

    desc = gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name="ports"), gnmi_pb2.PathElem(name="port", key={"name": "p1"}),
                               gnmi_pb2.PathElem(name="description")])

    def read():
        r = stub.Get(gnmi_pb2.GetRequest(path=[desc], encoding=gnmi_pb2.JSON_IETF), metadata=md,
                     compression=grpc.Compression.Gzip)
        return json.loads(r.notification[0].update[0].val.json_ietf_val)

    def set_description(text, commit=None):
        update = gnmi_pb2.Update(path=desc, val=gnmi_pb2.TypedValue(json_ietf_val=json.dumps(text).encode()))
        ext = [gnmi_ext_pb2.Extension(commit=commit)] if commit else []
        return stub.Set(gnmi_pb2.SetRequest(update=[update], extension=ext), metadata=md)

    def action(**kw):
        return gnmi_ext_pb2.Extension(commit=gnmi_ext_pb2.Commit(**kw))

    def control(**kw):
        return stub.Set(gnmi_pb2.SetRequest(extension=[action(**kw)]), metadata=md)

    original = read()
    check(isinstance(original, str), "gzip-compressed Get through grpcio", original)
    two = duration_pb2.Duration(seconds=2)
    set_description("tentative", gnmi_ext_pb2.Commit(id="c1", commit=gnmi_ext_pb2.CommitRequest(rollback_duration=two)))
    check(read() == "tentative", "commit confirmed: applied at once")
    try:
        set_description("meanwhile")
        check(False, "another Set while one waits", "was accepted")
    except grpc.RpcError as exc:
        check(exc.code() == grpc.StatusCode.FAILED_PRECONDITION, "another Set meanwhile: FAILED_PRECONDITION",
              exc.details())
    try:
        set_description("x", gnmi_ext_pb2.Commit(id="c9", commit=gnmi_ext_pb2.CommitRequest()))
        check(False, "a second commit confirmed", "was accepted")
    except grpc.RpcError as exc:
        check(exc.code() == grpc.StatusCode.FAILED_PRECONDITION, "a second commit: FAILED_PRECONDITION")
    try:
        control(id="wrong", confirm=gnmi_ext_pb2.CommitConfirm())
        check(False, "confirm with a wrong id", "was accepted")
    except grpc.RpcError as exc:
        check(exc.code() == grpc.StatusCode.INVALID_ARGUMENT, "confirm with a wrong id: INVALID_ARGUMENT")
    time.sleep(3.5)
    check(read() == original, "not confirmed: rolled back after the rollback duration", read())
    try:
        control(id="c1", confirm=gnmi_ext_pb2.CommitConfirm())
        check(False, "confirm after the rollback", "was accepted")
    except grpc.RpcError as exc:
        check(exc.code() == grpc.StatusCode.FAILED_PRECONDITION, "nothing waits any more: FAILED_PRECONDITION")

    set_description("kept", gnmi_ext_pb2.Commit(id="c2", commit=gnmi_ext_pb2.CommitRequest(rollback_duration=two)))
    control(id="c2", confirm=gnmi_ext_pb2.CommitConfirm())
    time.sleep(2.5)
    check(read() == "kept", "confirmed: kept past the rollback duration")

    set_description("cancelled", gnmi_ext_pb2.Commit(id="c3", commit=gnmi_ext_pb2.CommitRequest()))
    check(read() == "cancelled", "commit confirmed with the default duration")
    control(id="c3", cancel=gnmi_ext_pb2.CommitCancel())
    check(read() == "kept", "cancel: rolled back at once")
    set_description("plain again")
    check(read() == "plain again", "after cancel, plain Sets go through")


# ----- the specification's corners (grpcio + gnmi-pb: every field as sent) -----

def channel():
    if ARGS.cert:
        with open(ARGS.cert, "rb") as f:
            return grpc.secure_channel(ARGS.gnmi, grpc.ssl_channel_credentials(f.read()))
    return grpc.insecure_channel(ARGS.gnmi)


class Raw:
    """gNMI through grpcio with the gnmi-pb definitions, as admin (or `user`)."""

    def __init__(self, user="admin"):
        from gnmi_pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc

        self.pb = gnmi_pb2
        self.ext = gnmi_ext_pb2
        self.stub = gnmi_pb2_grpc.gNMIStub(channel())
        self.md = [("username", user), ("password", user)]

    def path(self, text, origin="", target=""):
        """'/ports/port[name=p1]/mtu' -> Path (keys: one per element, `k=v`)."""
        elems = []
        for part in [p for p in text.strip("/").split("/") if p]:
            name, _, rest = part.partition("[")
            keys = {}
            for kv in rest.rstrip("]").split("][") if rest else []:
                k, _, v = kv.partition("=")
                keys[k] = v
            elems.append(self.pb.PathElem(name=name, key=keys))
        return self.pb.Path(origin=origin, elem=elems, target=target)

    def get(self, *paths, encoding=None, prefix=None, datatype=0):
        encoding = self.pb.JSON_IETF if encoding is None else encoding
        request = self.pb.GetRequest(path=[self.path(p) for p in paths], encoding=encoding,
                                     type=datatype, prefix=prefix)
        return self.stub.Get(request, metadata=self.md, timeout=10)

    def value(self, path, encoding=None):
        """The one value at `path` (JSON parsed, or the scalar's field and value)."""
        n = self.get(path, encoding=encoding).notification[0]
        return typed(n.update[0].val)

    def set(self, update=(), replace=(), delete=(), extension=()):
        def updates(pairs):
            return [self.pb.Update(path=self.path(p), val=v) for p, v in pairs]
        request = self.pb.SetRequest(update=updates(update), replace=updates(replace),
                                     delete=[self.path(p) for p in delete], extension=list(extension))
        return self.stub.Set(request, metadata=self.md, timeout=10)

    def subscribe(self, paths, mode, encoding=None, prefix=None, poll=None, timeout=60, **sub):
        """The responses of a subscription: all of ONCE; for POLL and STREAM an iterator
        (requests after the list come from `poll`, an iterator of further messages), ended
        by the client after `timeout` seconds (a check waiting for an answer that never
        comes fails with DEADLINE_EXCEEDED instead of waiting for ever).
        `sub` sets the Subscription's fields (its mode as `sub_mode`)."""
        if "sub_mode" in sub:
            sub["mode"] = sub.pop("sub_mode")
        encoding = self.pb.JSON_IETF if encoding is None else encoding
        subs = [self.pb.Subscription(path=self.path(p), **sub) for p in paths]
        first = self.pb.SubscribeRequest(subscribe=self.pb.SubscriptionList(
            subscription=subs, mode=mode, encoding=encoding, prefix=prefix))

        def requests():
            yield first
            for message in poll or []:
                yield message
        return self.stub.Subscribe(requests(), metadata=self.md, timeout=timeout)


def typed(val):
    """A TypedValue: JSON parsed, other fields as (field, value)."""
    field = val.WhichOneof("value")
    if field in ("json_val", "json_ietf_val"):
        return json.loads(getattr(val, field))
    if field == "leaflist_val":
        return ("leaflist_val", [typed(e) for e in val.leaflist_val.element])
    return (field, getattr(val, field))


def updates_until_sync(responses):
    """Every update of the notifications before the sync_response: {path text: value}."""
    found = {}
    notifications = []
    for r in responses:
        if r.HasField("sync_response"):
            return found, notifications
        notifications.append(r.update)
        for u in r.update.update:
            found[show(u.path)] = typed(u.val)
    return found, notifications


def show(path):
    out = ""
    for e in path.elem:
        out += "/" + e.name + "".join(f"[{k}={v}]" for k, v in sorted(e.key.items()))
    return out or "/"


def next_update(responses, what, timeout=5):
    """The next notification of a stream, within `timeout` seconds."""
    result = []

    def read():
        for r in responses:
            if r.HasField("update"):
                result.append(r.update)
                return
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    check(result, what, f"nothing within {timeout} s")
    return result[0]


def status_of(call):
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code(), exc.details()
    return None, "accepted"


def targets():
    """prefix.target comes back in every notification of Get and Subscribe."""
    raw = Raw()
    pb = raw.pb
    prefix = raw.path("/ports", target="site-a")
    r = raw.stub.Get(pb.GetRequest(prefix=prefix, path=[raw.path("/port[name=p1]/mtu")],
                                   encoding=pb.JSON_IETF), metadata=raw.md)
    check(r.notification[0].prefix.target == "site-a", "Get: prefix.target reflected", r.notification[0].prefix)
    check(show(r.notification[0].update[0].path) == "/ports/port[name=p1]/mtu",
          "Get: the update's path is whole", r.notification[0])
    r = raw.get("/ports/port[name=p1]/mtu")
    check(not r.notification[0].HasField("prefix"), "Get without a target: no prefix")
    for mode in (pb.SubscriptionList.ONCE, pb.SubscriptionList.POLL, pb.SubscriptionList.STREAM):
        name = pb.SubscriptionList.Mode.Name(mode)
        stream = raw.subscribe(["/port[name=p1]/mtu"], mode, prefix=prefix)
        _, notifications = updates_until_sync(stream)
        check(notifications and all(n.prefix.target == "site-a" for n in notifications),
              f"{name}: prefix.target reflected in every notification", notifications)
        stream.cancel()
    stream = raw.subscribe(["/port[name=p1]/description"], pb.SubscriptionList.STREAM, prefix=prefix)
    updates_until_sync(stream)
    raw.set(update=[("/ports/port[name=p1]/description", pb.TypedValue(string_val="target check"))])
    n = next_update(stream, "STREAM: the change")
    check(n.prefix.target == "site-a", "STREAM on_change: prefix.target reflected", n)
    stream.cancel()


def timestamps():
    """Values read now are stamped with the time of the read: Get and ONCE alike, config
    and state alike; a change is stamped with the time it was published."""
    raw = Raw()
    pb = raw.pb
    raw.set(update=[("/ports/port[name=p1]/description", pb.TypedValue(string_val="stamped"))])
    committed = time.time_ns()
    time.sleep(1.5)
    for datatype, name in ((pb.GetRequest.CONFIG, "CONFIG"), (pb.GetRequest.STATE, "STATE"),
                           (pb.GetRequest.ALL, "ALL")):
        before = time.time_ns()
        r = raw.get("/ports/port[name=p1]", datatype=datatype)
        after = time.time_ns()
        stamp = r.notification[0].timestamp
        check(before - 50_000_000 <= stamp <= after + 50_000_000,
              f"Get {name}: stamped at the read ({(stamp - committed) / 1e9:.2f} s after the commit)")
    before = time.time_ns()
    stream = raw.subscribe(["/ports/port[name=p1]"], pb.SubscriptionList.ONCE)
    _, notifications = updates_until_sync(stream)
    after = time.time_ns()
    check(all(before - 50_000_000 <= n.timestamp <= after + 50_000_000 for n in notifications),
          "ONCE: stamped at the read, as Get")
    stream = raw.subscribe(["/ports/port[name=p1]/description"], pb.SubscriptionList.STREAM)
    updates_until_sync(stream)
    before = time.time_ns()
    raw.set(update=[("/ports/port[name=p1]/description", pb.TypedValue(string_val="stamped again"))])
    n = next_update(stream, "STREAM: the change")
    check(before - 50_000_000 <= n.timestamp <= time.time_ns(), "ON_CHANGE: stamped when the change was published")
    stream.cancel()


def defaults():
    """A leaf at its default is there in every dump as in Get; set back to its default it
    comes as an update with the default."""
    raw = Raw()
    pb = raw.pb
    mtu = "/ports/port[name=p2]/mtu"
    check(raw.value(mtu) == 9000, "Get: p2's mtu reads as its default 9000")
    entry = raw.value("/ports/port[name=p2]")
    check(entry.get("mtu") == 9000 and entry.get("enabled") is True,
          "Get of the entry: defaults included", entry)
    config = typed(raw.get("/ports/port[name=p2]", datatype=pb.GetRequest.CONFIG).notification[0].update[0].val)
    check(config.get("mtu") == 9000, "Get CONFIG of the entry: defaults included", config)
    for mode in (pb.SubscriptionList.ONCE, pb.SubscriptionList.POLL, pb.SubscriptionList.STREAM):
        name = pb.SubscriptionList.Mode.Name(mode)
        for path in (mtu, "/ports/port[name=p2]", "/ports/port[name=*]/mtu", "/ports/port/mtu"):
            stream = raw.subscribe([path], mode)
            found, _ = updates_until_sync(stream)
            stream.cancel()
            check(found.get("/ports/port[name=p2]/mtu") == 9000, f"{name} {path}: the default 9000 is there",
                  found)
    stream = raw.subscribe(["/ports/port[name=p9-0]"], pb.SubscriptionList.STREAM)
    found, _ = updates_until_sync(stream)
    check(found.get("/ports/port[name=p9-0]/mtu") == 9216, "p9-0's mtu is 9216 (the example sets it)", found)
    raw.set(delete=["/ports/port[name=p9-0]/mtu"])
    n = next_update(stream, "STREAM: mtu set back to its default")
    values = {show(u.path): typed(u.val) for u in n.update}
    check(values.get("/ports/port[name=p9-0]/mtu") == 9000 and not n.delete,
          "ON_CHANGE: a leaf back to its default is an update with the default, not a delete", n)
    raw.set(update=[("/ports/port[name=p9-0]/mtu", pb.TypedValue(uint_val=9100))])
    n = next_update(stream, "STREAM: mtu set again")
    check({show(u.path): typed(u.val) for u in n.update}.get("/ports/port[name=p9-0]/mtu") == 9100,
          "ON_CHANGE: the new value", n)
    stream.cancel()
    # a new entry comes with its defaults
    stream = raw.subscribe(["/ports/port[name=p99]"], pb.SubscriptionList.STREAM)
    updates_until_sync(stream)
    raw.set(update=[("/ports/port[name=p99]", pb.TypedValue(json_ietf_val=json.dumps(
        {"number": 30, "speed": "10g", "lane": 1}).encode()))])
    n = next_update(stream, "STREAM: a new entry")
    values = {show(u.path): typed(u.val) for u in n.update}
    check(values.get("/ports/port[name=p99]/mtu") == 9000 and values.get("/ports/port[name=p99]/enabled") is True,
          "ON_CHANGE: a new entry comes with its leaves at their default", values)
    stream.cancel()
    raw.set(delete=["/ports/port[name=p99]"])


def typed_values():
    """Values of the wrong type are refused naming the leaf and its type; nothing changes."""
    raw = Raw()
    pb = raw.pb
    before = raw.get("/", datatype=pb.GetRequest.CONFIG).notification[0].update[0].val.json_ietf_val
    cases = [
        ("replace", "/ports/port[name=p1]/description", pb.TypedValue(json_ietf_val=b"null"),
         ["description", "a string", "got null"]),
        ("replace", "/ports/port[name=p1]/description", pb.TypedValue(json_val=b"null"),
         ["description", "got null"]),
        ("update", "/ports/port[name=p1]/mtu", pb.TypedValue(string_val="9500"),
         ["mtu", "string_val \"9500\"", "an integer in 1500..10240", "int_val or uint_val"]),
        ("update", "/ports/port[name=p1]/description", pb.TypedValue(uint_val=7),
         ["description", "uint_val 7", "a string", "string_val"]),
        ("update", "/ports/port[name=p1]/enabled", pb.TypedValue(string_val="true"),
         ["enabled", "bool_val"]),
    ]
    for verb, path, value, words in cases:
        call = (lambda: raw.set(replace=[(path, value)])) if verb == "replace" else \
            (lambda: raw.set(update=[(path, value)]))
        code, details = status_of(call)
        what = f"{verb} {path} with {str(value).strip()}"
        check(code == grpc.StatusCode.INVALID_ARGUMENT and all(w in details for w in words),
              f"{what}: INVALID_ARGUMENT naming the leaf and its type", f"{code} {details}")
    after = raw.get("/", datatype=pb.GetRequest.CONFIG).notification[0].update[0].val.json_ietf_val
    check(before == after, "refused values changed nothing")
    raw.set(update=[("/ports/port[name=p1]/mtu", pb.TypedValue(uint_val=9500)),
                    ("/ports/port[name=p1]/enabled", pb.TypedValue(bool_val=False)),
                    ("/ports/port[name=p1]/description", pb.TypedValue(string_val="typed"))])
    check(raw.value("/ports/port[name=p1]/mtu") == 9500 and raw.value("/ports/port[name=p1]/enabled") is False
          and raw.value("/ports/port[name=p1]/description") == "typed", "values in the right fields are taken")


def missing_keys():
    """Keys left out are `*` in Get, Subscribe and Set delete alike."""
    raw = Raw()
    pb = raw.pb
    speeds = raw.get("/ports/port/speed").notification[0].update
    check(len(speeds) == 20 and all(u.path.elem[1].key["name"] for u in speeds),
          "Get /ports/port/speed: every port's, with its key", len(speeds))
    stream = raw.subscribe(["/ports/port/speed"], pb.SubscriptionList.ONCE)
    found, _ = updates_until_sync(stream)
    check(len(found) == 20, "ONCE /ports/port/speed: the same", len(found))
    r = raw.set(delete=["/ports/port/description"])
    check(r.response[0].op == pb.UpdateResult.DELETE, "Set delete /ports/port/description")
    left = [u for u in raw.get("/ports/port[name=*]/description").notification[0].update]
    check(not left, "... deleted every port's description", left)


def conformance():
    """The points a gNMI conformance run found, each as the specification recommends:
    JSON_IETF is RFC 7951 (a uint16 is a number, not "9700"), ascii_val is UNIMPLEMENTED,
    a sample_interval outside SAMPLE is INVALID_ARGUMENT (both origins). A path the model
    does not have is NOT_FOUND: unknown_paths."""
    raw = Raw()
    pb = raw.pb
    mtu = "/ports/port[name=p1]/mtu"
    code, details = status_of(lambda: raw.set(update=[(mtu, pb.TypedValue(json_ietf_val=b'"9700"'))]))
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "RFC 7951" in details and "9700 without quotes" in details,
          'JSON_IETF "9700" for a uint16: INVALID_ARGUMENT', f"{code} {details}")
    raw.set(update=[(mtu, pb.TypedValue(json_ietf_val=b"9700"))])
    check(raw.value(mtu) == 9700, "JSON_IETF 9700 for a uint16 is set", raw.value(mtu))
    raw.set(update=[(mtu, pb.TypedValue(json_val=b'"9600"'))])
    check(raw.value(mtu) == 9600, 'JSON (not IETF) "9600" is read by the leaf\'s type', raw.value(mtu))
    for path, text in ((mtu, "9500"), ("/ports/port[name=p1]/description", "uplink")):
        code, details = status_of(lambda: raw.set(update=[(path, pb.TypedValue(ascii_val=text))]))
        check(code == grpc.StatusCode.UNIMPLEMENTED and "string_val" in details,
              f"ascii_val on {path}: UNIMPLEMENTED", f"{code} {details}")
    for path, prefix in (("/ports", None), ("/interfaces/interface[name=p1]/state", pb.Path(origin="openconfig"))):
        for mode in (pb.TARGET_DEFINED, pb.ON_CHANGE):
            code, details = status_of(lambda: next(iter(raw.subscribe(
                [path], pb.SubscriptionList.STREAM, prefix=prefix, sub_mode=mode, sample_interval=10**9,
                timeout=10))))
            check(code == grpc.StatusCode.INVALID_ARGUMENT and "sample_interval" in details,
                  f"{pb.SubscriptionMode.Name(mode)} with a sample_interval on {path}: INVALID_ARGUMENT",
                  f"{code} {details}")


def unknown_paths():
    """A path the model does not have is NOT_FOUND (as the gNMI specification asks) with
    the nearest names, in Get, Subscribe and Set; so is data that is not there."""
    raw = Raw()
    pb = raw.pb
    for path, words in (("/ports/prot", ['no element "prot"', 'did you mean "port"?']),
                        ("/ports/port[name=p1]/mtuu", ['did you mean "mtu"?']),
                        ("/ecofilter-balancer/flows", ['did you mean "flow"?'])):
        code, details = status_of(lambda: raw.get(path))
        check(code == grpc.StatusCode.NOT_FOUND and all(w in details for w in words),
              f"Get {path}: NOT_FOUND with the nearest names", f"{code} {details}")
        code, details = status_of(lambda: next(iter(raw.subscribe([path], pb.SubscriptionList.ONCE))))
        check(code == grpc.StatusCode.NOT_FOUND, f"Subscribe {path}: NOT_FOUND", f"{code} {details}")
        code, details = status_of(lambda: raw.set(delete=[path]))
        check(code == grpc.StatusCode.NOT_FOUND, f"Set delete {path}: NOT_FOUND", f"{code} {details}")
        value = pb.TypedValue(json_ietf_val=b"1500")
        code, details = status_of(lambda: raw.set(update=[(path, value)]))
        check(code == grpc.StatusCode.NOT_FOUND and all(w in details for w in words),
              f"Set update {path}: NOT_FOUND", f"{code} {details}")
    code, details = status_of(lambda: raw.get("/ports/port[name=nope]"))
    check(code == grpc.StatusCode.NOT_FOUND and "no data" in details, "Get of an entry not there: NOT_FOUND", details)
    code, details = status_of(lambda: raw.get("/ports/port[name=nope]/mtu"))
    check(code == grpc.StatusCode.NOT_FOUND, "Get of a leaf of an entry not there: NOT_FOUND", details)


def proto():
    """Encoding PROTO: scalars per leaf in Get and Subscribe, and taken by Set."""
    raw = Raw()
    pb = raw.pb
    caps = raw.stub.Capabilities(pb.CapabilityRequest(), metadata=raw.md)
    check(pb.PROTO in caps.supported_encodings, "Capabilities lists PROTO", caps.supported_encodings)
    r = raw.get("/ports/port[name=p1]", encoding=pb.PROTO)
    values = {show(u.path): typed(u.val) for u in r.notification[0].update}
    check(values.get("/ports/port[name=p1]/name") == ("string_val", "p1")
          and values.get("/ports/port[name=p1]/number") == ("uint_val", 1)
          and values.get("/ports/port[name=p1]/speed") == ("string_val", "100g")
          and values.get("/ports/port[name=p1]/enabled") == ("bool_val", True)
          and values.get("/ports/port[name=p1]/mtu") == ("uint_val", 9000),
          "Get PROTO of an entry: one scalar per leaf, by type", values)
    state = raw.get("/ecofilter-balancer/balancing-config-hash", encoding=pb.PROTO, datatype=pb.GetRequest.STATE)
    check(typed(state.notification[0].update[0].val)[0] == "string_val", "Get PROTO of state", state)
    raw.set(update=[("/ecofilter-balancer/flow[name=bgp-to]/links", pb.TypedValue(leaflist_val=pb.ScalarArray(
        element=[pb.TypedValue(string_val="l1"), pb.TypedValue(string_val="l2")])))])
    links = raw.get("/ecofilter-balancer/flow[name=bgp-to]/links", encoding=pb.PROTO)
    value = typed(links.notification[0].update[0].val)
    check(value == ("leaflist_val", [("string_val", "l1"), ("string_val", "l2")]),
          "Set and Get PROTO of a leaf-list: leaflist_val of string_val", value)
    stream = raw.subscribe(["/ports/port[name=p2]"], pb.SubscriptionList.STREAM, encoding=pb.PROTO)
    found, _ = updates_until_sync(stream)
    check(found.get("/ports/port[name=p2]/number") == ("uint_val", 2)
          and found.get("/ports/port[name=p2]/mtu") == ("uint_val", 9000),
          "STREAM PROTO: scalars in the dump", found)
    raw.set(update=[("/ports/port[name=p2]/mtu", pb.TypedValue(uint_val=9200))])
    n = next_update(stream, "STREAM PROTO: the change")
    check([typed(u.val) for u in n.update] == [("uint_val", 9200)], "Set with uint_val; ON_CHANGE in PROTO", n)
    stream.cancel()
    once = raw.subscribe(["/ports/port[name=p2]/mtu"], pb.SubscriptionList.ONCE, encoding=pb.PROTO)
    found, _ = updates_until_sync(once)
    check(list(found.values()) == [("uint_val", 9200)], "ONCE PROTO", found)
    # Telegraf's gnmi input: SAMPLE in PROTO, list keys left out
    stream = raw.subscribe(["/ports/port/mtu"], pb.SubscriptionList.STREAM, encoding=pb.PROTO,
                           sub_mode=pb.SAMPLE, sample_interval=100_000_000)
    updates_until_sync(stream)
    n = next_update(stream, "SAMPLE PROTO: a sample")
    values = {show(u.path): typed(u.val) for u in n.update}
    check(len(values) == 20 and values.get("/ports/port[name=p2]/mtu") == ("uint_val", 9200)
          and values.get("/ports/port[name=p1]/mtu") == ("uint_val", 9000),
          "SAMPLE PROTO of /ports/port/mtu: every port's, defaults included", values)
    stream.cancel()
    code, details = status_of(lambda: raw.get("/ports", encoding=pb.ASCII))
    check(code == grpc.StatusCode.UNIMPLEMENTED and "PROTO" in details, "ASCII: UNIMPLEMENTED naming what is", details)


def rollback_duration():
    """set_rollback_duration moves the deadline of the waiting commit confirmed."""
    from google.protobuf import duration_pb2

    raw = Raw()
    pb, ext = raw.pb, raw.ext
    desc = "/ports/port[name=p1]/description"
    original = raw.value(desc)

    def control(**kw):
        return raw.set(extension=[ext.Extension(commit=ext.Commit(**kw))])

    def seconds(n):
        return duration_pb2.Duration(seconds=n)

    raw.set(update=[(desc, pb.TypedValue(string_val="tentative"))],
            extension=[ext.Extension(commit=ext.Commit(id="r1", commit=ext.CommitRequest(rollback_duration=seconds(2))))])
    control(id="r1", set_rollback_duration=ext.CommitSetRollbackDuration(rollback_duration=seconds(30)))
    time.sleep(3)
    check(raw.value(desc) == "tentative", "set_rollback_duration 30 s: not rolled back after the first 2 s")
    code, details = status_of(lambda: control(id="other", set_rollback_duration=ext.CommitSetRollbackDuration(
        rollback_duration=seconds(1))))
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "does not match" in details, "a wrong id: INVALID_ARGUMENT",
          details)
    code, details = status_of(lambda: control(id="r1", set_rollback_duration=ext.CommitSetRollbackDuration(
        rollback_duration=seconds(-5))))
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "65535 minutes" in details, "out of range: INVALID_ARGUMENT",
          details)
    started = time.monotonic()
    control(id="r1", set_rollback_duration=ext.CommitSetRollbackDuration(rollback_duration=seconds(1)))
    while raw.value(desc) == "tentative" and time.monotonic() - started < 10:
        time.sleep(0.1)
    took = time.monotonic() - started
    check(raw.value(desc) == original and 0.8 < took < 3, f"set_rollback_duration 1 s: rolled back {took:.1f} s later")
    code, details = status_of(lambda: control(id="r1", set_rollback_duration=ext.CommitSetRollbackDuration(
        rollback_duration=seconds(5))))
    check(code == grpc.StatusCode.FAILED_PRECONDITION, "nothing waits: FAILED_PRECONDITION", details)


class Login(grpc.UnaryUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds a user's username and password to every call, as `grpcurl -H` does."""

    def __init__(self, user):
        self.md = [("username", user), ("password", user)]

    def _with_login(self, details):
        return details._replace(metadata=list(details.metadata or []) + self.md)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_login(details), request)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._with_login(details), requests)


def reflection():
    """grpcurl's way: the services and their descriptors from the server itself, once
    logged in (its requests cost memory like any other)."""
    from google.protobuf import descriptor_pool
    from grpc_reflection.v1alpha import reflection_pb2 as rpb
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

    def list_services(chan):
        call = chan.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                                  request_serializer=rpb.ServerReflectionRequest.SerializeToString,
                                  response_deserializer=rpb.ServerReflectionResponse.FromString)
        answers = list(call(iter([rpb.ServerReflectionRequest(list_services="")]), timeout=10))
        return [s.name for a in answers for s in a.list_services_response.service]

    code, details = status_of(lambda: list_services(channel()))
    check(code == grpc.StatusCode.UNAUTHENTICATED, "reflection without a login: UNAUTHENTICATED", details)
    viewer = grpc.intercept_channel(channel(), Login("viewer"))
    db = ProtoReflectionDescriptorDatabase(viewer)
    services = list(db.get_services())
    check("gnmi.gNMI" in services, "reflection lists gnmi.gNMI", services)
    pool = descriptor_pool.DescriptorPool(db)
    service = pool.FindServiceByName("gnmi.gNMI")
    check({m.name for m in service.methods} == {"Capabilities", "Get", "Set", "Subscribe"},
          "reflection describes the four RPCs", [m.name for m in service.methods])
    get = pool.FindMessageTypeByName("gnmi.GetRequest")
    check("prefix" in get.fields_by_name and "extension" in get.fields_by_name,
          "reflection describes the messages, their imports resolved", list(get.fields_by_name))
    commit = pool.FindMessageTypeByName("gnmi_ext.Commit")
    check("set_rollback_duration" in commit.fields_by_name, "and gnmi_ext's")
    # grpcurl asks v1 first: the same messages under another service name
    names = list_services(viewer)
    check("gnmi.gNMI" in names, "reflection v1 lists gnmi.gNMI too", names)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=[
        "read_write", "subscribe", "auth", "confirmed", "bad_values", "targets", "timestamps", "defaults",
        "typed_values", "missing_keys", "unknown_paths", "conformance", "proto", "rollback_duration",
        "reflection"])
    parser.add_argument("--gnmi", required=True)
    parser.add_argument("--mgmt", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--cert")
    ARGS = parser.parse_args()
    globals()[ARGS.scenario]()
    print("done", flush=True)
    finish(0)


main()
