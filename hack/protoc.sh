#!/usr/bin/env bash
# Regenerates the Go code of the gRPC APIs (internal/lvmd/proto/*.pb.go from lvmd.proto,
# internal/transfer/proto/*.pb.go from transfer.proto). protoc comes from Debian (installed here when
# missing); protoc-gen-go and protoc-gen-go-grpc are `go tool` dependencies
# pinned in go.mod, so the output depends only on go.mod and protoc's version.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"

if ! command -v protoc >/dev/null; then
	echo "protoc.sh: installing protobuf-compiler" >&2
	if [[ "$(id -u)" != 0 ]]; then
		echo "protoc.sh: protoc is missing; install protobuf-compiler (needs root)" >&2
		exit 1
	fi
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >&2
fi

BIN="$(mktemp -d)"
trap 'rm -rf "${BIN}"' EXIT
go build -o "${BIN}/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "${BIN}/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc

# Every API: lvmd's (the node agent and `lvms lvmd`) and transfer's (node agent to node agent).
for PROTO in internal/lvmd/proto/lvmd.proto internal/transfer/proto/transfer.proto; do
	PROTO_DIR="$(dirname "${PROTO}")"
	protoc \
		--plugin=protoc-gen-go="${BIN}/protoc-gen-go" \
		--plugin=protoc-gen-go-grpc="${BIN}/protoc-gen-go-grpc" \
		--proto_path="${ROOT}/${PROTO_DIR}" \
		--go_out="${ROOT}/${PROTO_DIR}" --go_opt=paths=source_relative \
		--go-grpc_out="${ROOT}/${PROTO_DIR}" --go-grpc_opt=paths=source_relative \
		"${ROOT}/${PROTO}"
	echo "protoc.sh: generated $(cd "${PROTO_DIR}" && ls ./*.pb.go | tr '\n' ' ')" >&2
done
