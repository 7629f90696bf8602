#!/usr/bin/env bash
# Runs the Kubernetes manifest check (k8s_manifest_test.py) with the system Python.
exec python3 tests/e2e/k8s_manifest_test.py "$@"
