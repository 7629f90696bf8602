"""Counts test cases from a `bazel test --test_summary=short` run.

Usage: count_tests.py TESTLOGS_DIR BAZEL_OUTPUT_LOG [EXTRA_JUNIT_XML]
The summary lines of the log say which targets ran and how they ended. For a target that
passed or failed, its JUnit report (written by tests/catch_main.cc) gives one <testcase> per
Catch2 TEST_CASE; a target that failed to build, timed out, or left no report counts as one
failure. EXTRA_JUNIT_XML (the fuzz run's report) adds its cases; when given and missing or
empty, that counts as one failure. Prints the failing cases, then "N passed, N failed"; exits 1
when anything failed.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

SUMMARY = re.compile(r"^(//\S+)\s+(\(cached\) )?(PASSED|FAILED TO BUILD|FAILED|TIMEOUT|FLAKY|NO STATUS|SKIPPED)\b")


def count_report(target, logs):
    rel = target.lstrip("/").replace(":", "/")
    try:
        root = ET.parse(os.path.join(logs, rel, "test.xml")).getroot()
    except (OSError, ET.ParseError):
        return 0, [f"{target}: no test report"]
    passed, failures = 0, []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failures.append(f"{target}: {case.get('name')}")
        else:
            passed += 1
    if passed == 0 and not failures:
        failures.append(f"{target}: report lists no test case")
    return passed, failures


def main(argv):
    logs, log_file = argv[1], argv[2]
    results = {}
    with open(log_file, errors="replace") as f:
        for line in f:
            m = SUMMARY.match(line.strip())
            if m:
                results[m.group(1)] = m.group(3)
    passed, failures = 0, []
    for target, status in sorted(results.items()):
        if status in ("PASSED", "FAILED", "FLAKY"):
            p, f = count_report(target, logs)
            if status == "FAILED" and not f:
                f = [f"{target}: failed"]
            passed += p
            failures += f
        else:
            failures.append(f"{target}: {status}")
    if not results:
        failures.append("no test target ran")
    if len(argv) > 3:
        try:
            root = ET.parse(argv[3]).getroot()
            cases = list(root.iter("testcase"))
        except (OSError, ET.ParseError):
            cases = []
        if not cases:
            failures.append("fuzz: no report (tests/fuzz/run.sh did not finish)")
        for case in cases:
            if case.find("failure") is not None:
                failures.append(f"fuzz: {case.get('name')}")
            else:
                passed += 1
    for f in failures:
        print(f"FAILED {f}")
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
