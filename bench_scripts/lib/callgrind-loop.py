#!/usr/bin/env python3
"""The inclusive Ir of one run's posting loop, read from a callgrind output file.

    callgrind-loop.py FILE --name PATTERN   the function whose name matches PATTERN (fnmatch)
    callgrind-loop.py FILE --calls K        the function of the profiled executable that calls one
                                            function of another object exactly K times
    ... --minus PATTERN                     less what the loop's calls of the functions matching
                                            PATTERN cost (inclusive)

Inclusive means the function with everything it calls (the provider's post_send and poll_cq
included), summed over its calls. Counting the loop alone is what lets one run per tool give
instructions per op: startup (the dynamic loader, ibv_get_device_list, the handshake) does not
scale with the iterations and varies by ~2 % of a run between runs, so a whole-program count
needs two runs and a difference. --calls exists for stripped executables such as Debian's
perftest, whose loop (run_iter_bw) has no name: it is the only function that calls the
provider's post_send once per post (K = iterations / postlist). --minus takes out work a loop
does per second, not per operation (rw-tput-sender's Meter::attend: its once-a-second clock step
and stop check): under callgrind a run of N operations takes seconds more on a busy guest than
on a quiet one, and that work would count per operation what a real NIC's run does ~once in
millions. Prints the count, or one line on stderr and exit 1 when the loop is not found exactly
once.
"""
import fnmatch
import os
import sys


def parse(path):
    """Call edges: (caller, callee) -> [calls, inclusive Ir]; a function is (object, name)."""
    names = {"ob": {}, "fn": {}}
    exe = None
    ob = fn = cob = cfn = None
    edges = {}
    pending = None
    with open(path) as f:
        for line in f:
            if pending is not None:
                # The line after calls= is the call's cost: position, then Ir.
                cost = line.split()
                e = edges.setdefault(pending, [0, 0])
                e[0] += pending_calls
                e[1] += int(cost[1]) if len(cost) > 1 else 0
                pending = None
                cob = None
                continue
            key, _, value = line.rstrip("\n").partition("=")
            if key in ("ob", "cob", "fn", "cfn"):
                space = names["ob" if key in ("ob", "cob") else "fn"]
                ident, _, name = value.partition(" ")
                if name:
                    space[ident] = name
                name = space.get(ident, ident)
                if key == "ob":
                    ob = name
                elif key == "cob":
                    cob = name
                elif key == "fn":
                    fn = (ob, name)
                else:
                    cfn = name
            elif key == "calls":
                pending_calls = int(value.split()[0])
                pending = (fn, (cob or ob, cfn))
            elif line.startswith("cmd:"):
                exe = os.path.basename(line.split()[1])
    return exe, edges


def main():
    usage = "usage: callgrind-loop.py FILE --name PATTERN | --calls K [--minus PATTERN]"
    if len(sys.argv) not in (4, 6) or sys.argv[2] not in ("--name", "--calls"):
        sys.exit(usage)
    if len(sys.argv) == 6 and sys.argv[4] != "--minus":
        sys.exit(usage)
    path, mode, arg = sys.argv[1:4]
    minus = sys.argv[5] if len(sys.argv) == 6 else None
    exe, edges = parse(path)
    if mode == "--name":
        loops = {callee for (_, callee) in edges if fnmatch.fnmatchcase(callee[1], arg)}
        what = f"functions named {arg}"
    else:
        k = int(arg)
        loops = {
            caller
            for (caller, callee), (calls, _) in edges.items()
            if calls == k and caller[0] != callee[0] and os.path.basename(caller[0]) == exe
        }
        what = f"functions of {exe} that call another object's function {k} times"
    if len(loops) != 1:
        found = ", ".join(sorted(n for _, n in loops)) or "none"
        sys.exit(f"callgrind-loop.py: {path}: {len(loops)} {what}, not one (found: {found})")
    loop = loops.pop()
    total = sum(ir for (_, callee), (_, ir) in edges.items() if callee == loop)
    if minus is not None:
        total -= sum(
            ir
            for (caller, callee), (_, ir) in edges.items()
            if caller == loop and fnmatch.fnmatchcase(callee[1], minus)
        )
    print(total)


main()
