"""Judges a client's own test suite run against the suite's KNOWN_FAILURES file.

Shared by kazoo-suite, gozk and curator-recipes (through compat_judge in lib.sh), so that the three read
that file and count the same way.

KNOWN_FAILURES: one test a line, `<test id> <reason>`; `#` starts a comment. Reasons start with
`known, <gap>: <detail>` (a feature paddock does not have yet, e.g. `known, paddock has no ensemble: ...`)
or `harness: <detail>` (a limit of running the server in another process, which holds against ZooKeeper
too). A `~` before the id marks a flaky test; its reason starts with `flaky, <cause>`: the race, and whose it
is. A reason that names a paddock bug or gap (`BUGS.md P<n>`, or a cause starting with `paddock`) is
labelled as paddock's, any other as a race in the client's own test.

A flaky entry cannot hide a failure: a `~` test that fails is run once more by the suite (--flaky-failed
lists them, the suite re-runs exactly those and gives their results with --retried). It passes when its
second run passes, and the verdict names the retry (`RETRIED`); it fails the suite when it fails twice, or
when it failed and no second run was given. A listed-flaky test is never counted as skipped.

Input: a JSON file {test id: [status, message]}, status one of pass, fail, skip, noreport (never
reported: the test binary died). Verdicts, one line a test: `ok`, `FAIL` (an unlisted failure, a listed
non-`~` test that passed, a `~` test that failed twice, or with --whole a listed test that did not run),
`skip` (skipped by the suite itself), `known` (a listed non-`~` test that failed: counted as skipped, with
its reason). Then one `RETRIED <id>\t<outcome>` line per re-run flaky test, one `SKIP <count>\t<reason>`
line per reason and `SUMMARY <passed> <failed> <skipped>`.

    python3 known_failures.py RESULTS.json KNOWN_FAILURES [--whole] [--harness-only] [--retried RETRY.json]
    python3 known_failures.py RESULTS.json KNOWN_FAILURES --flaky-failed [--harness-only]

--whole: every test ran (no filter), so a listed test that is missing was renamed or removed.
--harness-only: only `harness:` entries apply (a run against ZooKeeper, which has paddock's gaps filled);
  `~` entries whose cause is the client's own race apply too (they hold against any server).
--flaky-failed: print the ids of the `~` tests that failed (one a line), for the suite to run again.
--retried RETRY.json: the second run's results of those tests (same format).
"""

import collections
import json
import re
import sys


def load_known(path, harness_only):
    known, flaky = {}, set()
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, reason = line.partition(" ")
            reason = reason.strip()
            is_flaky = name.startswith("~")
            if is_flaky and not reason.startswith("flaky, "):
                sys.exit(f"{path}:{number}: a `~` entry's reason must start with `flaky, <cause>`")
            if not is_flaky and not reason.startswith(("known, ", "harness: ")):
                sys.exit(f"{path}:{number}: a reason must start with `known, <gap>:` or `harness:`")
            if harness_only and not (reason.startswith("harness:")
                                     or (is_flaky and not paddocks_own(reason.removeprefix("flaky, ")))):
                continue
            if is_flaky:
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


def failed(status):
    return status in ("fail", "noreport")


def main(argv):
    results_path, known_path, *flags = argv
    retried_path = None
    if "--retried" in flags:
        i = flags.index("--retried")
        retried_path = flags[i + 1]
        del flags[i:i + 2]
    known, flaky = load_known(known_path, "--harness-only" in flags)
    with open(results_path) as f:
        results = json.load(f)
    if "--flaky-failed" in flags:
        for tid in sorted(results):
            if tid in flaky and failed(results[tid][0]):
                print(tid)
        return
    retried = {}
    if retried_path is not None:
        with open(retried_path) as f:
            retried = json.load(f)

    passed = failed_n = skipped = 0
    reasons = collections.defaultdict(list)
    retries = []
    for tid in sorted(results):
        status, msg = results[tid]
        if status == "noreport":
            msg = "never reported (panic or timeout)"
        if status == "pass":
            if tid in known and tid not in flaky:
                print(f"FAIL {tid}: listed in KNOWN_FAILURES but passed (remove it)")
                failed_n += 1
            else:
                print(f"ok {tid}")
                passed += 1
        elif status == "skip":
            print(f"skip {tid}: {msg}")
            skipped += 1
            reasons[f"skipped by the suite: {msg}"].append(tid)
        elif tid in flaky:
            second = retried.get(tid)
            why = group(known[tid], True)
            if second is None:
                print(f"FAIL {tid}: listed flaky, failed ({msg}) and was not run again")
                failed_n += 1
            elif second[0] == "pass":
                print(f"ok {tid} (retried: the first run failed: {msg})")
                passed += 1
                retries.append((tid, f"failed ({msg}), passed when run again; {why}"))
            else:
                again = "never reported" if second[0] == "noreport" else second[1]
                print(f"FAIL {tid}: listed flaky, failed twice: first {msg}; then {again}")
                failed_n += 1
                retries.append((tid, f"failed ({msg}), failed again ({again}): FAIL; {why}"))
        elif tid in known:
            print(f"known {tid}: {known[tid]}")
            skipped += 1
            reasons[group(known[tid], False)].append(tid)
        else:
            print(f"FAIL {tid}: {msg}")
            failed_n += 1
    if "--whole" in flags:
        for tid in sorted(set(known) - set(results)):
            print(f"FAIL {tid}: listed in KNOWN_FAILURES but did not run (renamed?)")
            failed_n += 1
    for tid, outcome in retries:
        print(f"RETRIED {tid}\t{outcome}")
    for reason, tests in sorted(reasons.items()):
        print(f"SKIP {len(tests)}\t{reason} ({', '.join(tests)})")
    print(f"SUMMARY {passed} {failed_n} {skipped}")


if __name__ == "__main__":
    main(sys.argv[1:])
