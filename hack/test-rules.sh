#!/usr/bin/env bash
# make test-rules: checks dist/prometheus-rules.yaml (the alerts of config/prometheus, rendered by
# make dist) with promtool, and runs the alert unit tests under test/prometheus (promtool test
# rules). Every alert must have at least one test: an alert nobody tested fails the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

promtool="$(bash hack/promtool.sh | tail -1)"
rules=dist/prometheus-rules.yaml
"${promtool}" check rules "${rules}"
"${promtool}" test rules test/prometheus/*_test.yaml

fail=0
for alert in $(sed -n 's/^ *- alert: *//p' "${rules}" | sort -u); do
	if ! grep -qE "alertname: *${alert}\$" test/prometheus/*_test.yaml; then
		echo "test-rules: FAIL: alert ${alert} has no promtool test under test/prometheus" >&2
		fail=1
	fi
done
[[ ${fail} -eq 0 ]] || exit 1
echo "test-rules: $(sed -n 's/^ *- alert: *//p' "${rules}" | sort -u | wc -l) alerts checked and tested"
