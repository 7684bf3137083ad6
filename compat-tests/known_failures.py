"""Judges a client's own test suite run against the suite's KNOWN_FAILURES file.

Shared by kazoo-suite, gozk and curator-recipes (through compat_judge in lib.sh), so that the three read
that file and count the same way.

KNOWN_FAILURES: one test a line, `<test id> <reason>`; `#` starts a comment. A `~` before the id marks a
flaky test, which may fail or pass. Reasons start with `known, <gap>: <detail>` (a feature paddock does
not have yet, e.g. `known, paddock has no ensemble: ...`) or `harness: <detail>` (a limit of running the
server in another process, which holds against ZooKeeper too); a flaky test's reason may also start with
`flaky, <detail>`. The skip line of a flaky test says why it is flaky from its reason: a reason that
names a paddock bug or gap (`BUGS.md P<n>`, or one that starts with `paddock`) is labelled as paddock's,
any other `flaky, ...` as a race in the client's own test.

Input: a JSON file {test id: [status, message]}, status one of pass, fail, skip, noreport (never
reported: the test binary died). Verdicts, one line a test: `ok`, `FAIL` (an unlisted failure, a listed
non-`~` test that passed, or with --whole a listed test that did not run), `skip` (skipped by the suite
itself), `known` (a listed test that failed: counted as skipped, with its reason). Then one
`SKIP <count>\t<reason>` line per reason and `SUMMARY <passed> <failed> <skipped>`.

    python3 known_failures.py RESULTS.json KNOWN_FAILURES [--whole] [--harness-only]

--whole: every test ran (no filter), so a listed test that is missing was renamed or removed.
--harness-only: only `harness:` entries apply (a run against ZooKeeper, which has paddock's gaps filled).
"""

import collections
import json
import re
import sys


def load_known(path, harness_only):
    known, flaky = {}, set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, reason = line.partition(" ")
            reason = reason.strip()
            if harness_only and not reason.startswith("harness:"):
                continue
            if name.startswith("~"):
                name = name[1:]
                flaky.add(name)
            known[name] = reason
    return known, flaky


def paddocks_own(detail):
    """Whether a flaky entry's reason blames paddock (a BUGS.md entry, or a sentence about paddock)."""
    return re.search(r"\bBUGS\.md P\d+", detail) is not None or detail.startswith("paddock")


def group(reason, flaky):
    """The skip line a known failure is counted under: the gap, without the per-test detail."""
    if reason.startswith("known, "):
        reason = "ran and failed as listed in KNOWN_FAILURES: " + reason.removeprefix("known, ").split(":", 1)[0]
    if flaky and reason.startswith("flaky, "):
        detail = reason.removeprefix("flaky, ")
        if paddocks_own(detail):
            return "flaky, a paddock bug or gap: " + detail
        return "flaky, a race in the client's own test: " + detail
    if flaky:
        return "flaky: " + reason
    return reason


def main(argv):
    results_path, known_path, *flags = argv
    known, flaky = load_known(known_path, "--harness-only" in flags)
    with open(results_path) as f:
        results = json.load(f)

    passed = failed = skipped = 0
    reasons = collections.defaultdict(list)
    for tid in sorted(results):
        status, msg = results[tid]
        if status == "pass":
            if tid in known and tid not in flaky:
                print(f"FAIL {tid}: listed in KNOWN_FAILURES but passed (remove it)")
                failed += 1
            else:
                print(f"ok {tid}")
                passed += 1
        elif status == "skip":
            print(f"skip {tid}: {msg}")
            skipped += 1
            reasons[f"skipped by the suite: {msg}"].append(tid)
        elif tid in known:
            print(f"known {tid}: {known[tid]}")
            skipped += 1
            reasons[group(known[tid], tid in flaky)].append(tid)
        else:
            state = "never reported (panic or timeout)" if status == "noreport" else msg
            print(f"FAIL {tid}: {state}")
            failed += 1
    if "--whole" in flags:
        for tid in sorted(set(known) - set(results)):
            print(f"FAIL {tid}: listed in KNOWN_FAILURES but did not run (renamed?)")
            failed += 1
    for reason, tests in sorted(reasons.items()):
        print(f"SKIP {len(tests)}\t{reason} ({', '.join(tests)})")
    print(f"SUMMARY {passed} {failed} {skipped}")


if __name__ == "__main__":
    main(sys.argv[1:])
