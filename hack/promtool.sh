#!/usr/bin/env bash
# Puts promtool (Prometheus' rule checker and unit tester) into the cache and prints its path as the
# LAST line of stdout. hack/test-rules.sh uses it.
#
# It comes from the distribution's prometheus package: `apt-get download` fetches the .deb (no
# install, no prometheus service) and only usr/bin/promtool is unpacked, under
# ${XDG_CACHE_HOME:-~/.cache}/lvms/promtool-deb/<package version>. Building it from the Go module
# proxy took 289-318 s of a cold `make test`; this takes seconds. PROMTOOL_FROM_SOURCE=1 builds
# the pinned module version instead (hack/go-tool.sh), as before.
set -euo pipefail

if [[ "${PROMTOOL_FROM_SOURCE:-}" == 1 ]]; then
	exec bash "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh" promtool \
		"github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION:-v0.316.0}"
fi

log() { echo "promtool: $*" >&2; }

candidate() { apt-cache policy prometheus 2>/dev/null | sed -n 's/^ *Candidate: *//p'; }
version="$(candidate)"
if [[ -z "${version}" || "${version}" == "(none)" ]]; then
	log "no prometheus package known to apt: apt-get update"
	apt-get update -qq >&2
	version="$(candidate)"
fi
if [[ -z "${version}" || "${version}" == "(none)" ]]; then
	log "apt knows no prometheus package; set PROMTOOL_FROM_SOURCE=1 to build promtool from the module proxy"
	exit 1
fi

dir="${XDG_CACHE_HOME:-${HOME}/.cache}/lvms/promtool-deb/${version//[^A-Za-z0-9.+~-]/_}"
bin="${dir}/usr/bin/promtool"
if [[ ! -x "${bin}" ]]; then
	log "unpacking promtool of Debian's prometheus ${version} (first time only)"
	tmp="$(mktemp -d)"
	trap 'rm -rf "${tmp}"' EXIT
	(cd "${tmp}" && apt-get download -qq "prometheus=${version}" >&2)
	mkdir -p "${tmp}/root"
	dpkg-deb --fsys-tarfile "${tmp}"/prometheus_*.deb | tar -x -C "${tmp}/root" ./usr/bin/promtool
	mkdir -p "${dir}/usr/bin"
	mv "${tmp}/root/usr/bin/promtool" "${bin}.tmp"
	mv "${bin}.tmp" "${bin}"
fi
"${bin}" --version >&2
echo "${bin}"
