#!/usr/bin/env python3
"""Copy a compose file without its services' `ports:` lists (scripts/docker-test.sh).

docker-compose 1.29 refuses published ports on a service with `network_mode: host` ("host" network_mode
is incompatible with port_bindings), and an override file can add list entries but not remove them. So the
test runs docker-compose.yml as it is but for those lines, and prints the difference. Line by line (no YAML
round trip), so everything else, anchors and comments included, stays as written.

  compose_without_ports.py IN OUT
"""
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
out, skip = [], None
for line in open(src).read().splitlines(keepends=True):
    indent = len(line) - len(line.lstrip(" "))
    if skip is not None and line.strip() and indent > skip:
        continue          # the list under `ports:`
    if line.strip():
        skip = None
    if re.match(r"^ +ports:\s*$", line):
        skip = indent
        continue
    out.append(line)
open(dst, "w").write("".join(out))
