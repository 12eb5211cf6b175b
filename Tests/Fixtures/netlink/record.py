# Records route netlink messages for Tests/FetchKitTests/Network: run as root with iproute2,
#   unshare -n python3 Tests/Fixtures/netlink/record.py > Tests/Fixtures/netlink/recorded.json
import json, socket, struct, subprocess, time, select, sys
GROUPS = 0x1 | 0x10 | 0x40 | 0x100 | 0x400
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
s.bind((0, GROUPS))
def drain(label, out):
    time.sleep(0.1)
    while select.select([s], [], [], 0.05)[0]:
        out.append({"step": label, "hex": s.recv(65536).hex()})
def dump(kind, seq, out, label):
    payload = 16 if kind == 18 else 12
    s.send(struct.pack("=IHHII", 16 + payload, kind, 0x301, seq, 0) + b"\0" * payload)
    while True:
        data = s.recv(65536)
        out.append({"step": label, "hex": data.hex()})
        # NLMSG_DONE in this datagram?
        off, done = 0, False
        while off + 16 <= len(data):
            ln, ty = struct.unpack_from("=IH", data, off)
            if ty == 3: done = True
            off += (ln + 3) & ~3
        if done: break
out = []
def ip(*args): subprocess.run(["ip", *args], check=True)
ip("link", "set", "lo", "up"); drain("lo up", out)
ip("link", "add", "d0", "type", "veth", "peer", "name", "d1"); drain("veth added", out)
ip("link", "set", "d1", "up"); drain("peer up", out)
ip("link", "set", "d0", "up"); drain("dummy up", out)
ip("addr", "add", "10.1.0.2/24", "dev", "d0"); drain("address added", out)
ip("route", "add", "default", "via", "10.1.0.1"); drain("default route added", out)
ip("-6", "addr", "add", "fd00::2/64", "dev", "d0", "nodad"); drain("ipv6 address added", out)
ip("-6", "route", "add", "default", "via", "fd00::1"); drain("ipv6 default route added", out)
dump(18, 1, out, "link dump"); dump(26, 2, out, "route dump")
ip("-6", "route", "del", "default"); drain("ipv6 default route deleted", out)
ip("route", "del", "default"); drain("default route deleted", out)
ip("route", "add", "default", "via", "10.1.0.1"); drain("default route added again", out)
ip("link", "set", "d0", "down"); drain("dummy down", out)
ip("link", "del", "d0"); drain("dummy deleted", out)
json.dump(out, sys.stdout, indent=1)
