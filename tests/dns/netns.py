"""A network of one machine for the tests of what Wicket looks up.

Run as `unshare --net --mount python3 netns.py SPEC.json` (root, or with
`--user --map-root-user`): in the new network namespace it brings up
loopback, points /etc/resolv.conf (bound over, in the new mount namespace
only) at its own name server on 127.0.0.1:53, which answers from the spec's
table and logs every name it is asked, and starts a TCP service on
127.0.0.1 that logs every connection it accepts and answers one HTTP
response. Then it runs the spec's command (`{port}` in an argument is the
service's port), answering each card the command prints with the next of
the spec's answers, and prints one JSON report: the names asked, the
connections the service took, the command's output lines and exit code.
Nothing leaves the machine: the namespace has no other interface.

The spec: {"names": {"NAME": ["ADDRESS", ...]}, "answers": ["deny", ...],
"command": [...], "env": {...}}. A name's addresses are given one per
query of it, the last repeated: ["93.184.216.34", "127.0.0.1"] answers the
first query with a public address and every later one with loopback.
"""

import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading

spec = json.load(open(sys.argv[1]))
queries = []
accepts = []
lock = threading.Lock()

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
resolv = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
resolv.write("nameserver 127.0.0.1\noptions attempts:1 timeout:1\n")
resolv.close()
os.chmod(resolv.name, 0o644)
subprocess.run(["mount", "--make-rprivate", "/"], check=True)
subprocess.run(["mount", "--bind", resolv.name, "/etc/resolv.conf"], check=True)


def name_of(packet, at):
    labels = []
    while packet[at]:
        length = packet[at]
        labels.append(packet[at + 1 : at + 1 + length].decode("ascii", "replace"))
        at += 1 + length
    return ".".join(labels).lower(), at + 1


def serve_dns(server):
    asked = {}
    while True:
        packet, client = server.recvfrom(4096)
        try:
            name, end = name_of(packet, 12)
            qtype, qclass = struct.unpack("!HH", packet[end : end + 4])
        except (IndexError, struct.error):
            continue
        with lock:
            queries.append({"name": name, "type": qtype})
        question = packet[12 : end + 4]
        table = spec["names"].get(name)
        answers = []
        if table is not None and qtype == 1:
            count = asked.get(name, 0)
            asked[name] = count + 1
            address = table[min(count, len(table) - 1)]
            answers.append(
                b"\xc0\x0c"
                + struct.pack("!HHIH", 1, 1, 0, 4)
                + socket.inet_aton(address)
            )
        # NXDOMAIN for a name not in the table; no error and no answer
        # for one that is, asked another type (AAAA).
        flags = 0x8180 if table is not None else 0x8183
        header = packet[:2] + struct.pack("!HHHHH", flags, 1, len(answers), 0, 0)
        server.sendto(header + question + b"".join(answers), client)


def serve_tcp(listener):
    while True:
        connection, _ = listener.accept()
        with lock:
            accepts.append(connection.getsockname()[1])
        try:
            connection.settimeout(5)
            connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nlocal\n"
            )
        except OSError:
            pass
        connection.close()


dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dns.bind(("127.0.0.1", 53))
threading.Thread(target=serve_dns, args=(dns,), daemon=True).start()
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
port = listener.getsockname()[1]
threading.Thread(target=serve_tcp, args=(listener,), daemon=True).start()

command = [part.replace("{port}", str(port)) for part in spec["command"]]
environment = dict(os.environ)
environment.update(spec.get("env", {}))
child = subprocess.Popen(
    command,
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    env=environment,
    text=True,
)
answers = list(spec.get("answers", []))
lines = []
for line in child.stdout:
    line = line.strip()
    if not line:
        continue
    try:
        value = json.loads(line)
    except ValueError:
        value = {"unparsed": line}
    lines.append(value)
    if isinstance(value, dict) and value.get("type") == "card":
        answer = answers.pop(0) if answers else "deny"
        child.stdin.write(json.dumps({"card": value["id"], "answer": answer}) + "\n")
        child.stdin.flush()
child.stdin.close()
stderr = child.stderr.read()
code = child.wait()
with lock:
    print(
        json.dumps(
            {
                "port": port,
                "queries": queries,
                "accepts": accepts,
                "lines": lines,
                "stderr": stderr,
                "code": code,
            }
        )
    )
