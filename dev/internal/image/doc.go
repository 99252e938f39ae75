// Package image builds the project's OCI images without a Docker daemon: the product image
// ghcr.io/lvm-operator/lvms (the static lvms binary plus the Debian host tools it runs), the
// kubernetes-csi sidecars, a workload image and a pause image for the local cluster.
//
// Images are assembled with go-containerregistry (pkg/v1, mutate, layout); the builder only
// produces layer contents. Every layer is a Tree written as a tar with sorted entries, one fixed
// modification time (SOURCE_DATE_EPOCH), uid/gid 0 and no user or group names, so the same inputs
// give the same layer digest, and the same config and manifest digest. Debian packages are
// fetched with `apt-get download`, their runtime dependency closure is computed from
// `apt-cache depends`, and they are unpacked from `dpkg-deb --fsys-tarfile` without running
// maintainer scripts. CheckSharedLibs proves that every ELF file in an image finds its shared
// libraries, and each image carries an SPDX 2.3 SBOM of its Debian packages and Go modules.
//
// This is development tooling (dev/cmd/lvms-dev image); it is never part of the product binary.
package image
