// Package csi holds what the CSI services of driver topolvm.io share: volume size rules, access-mode
// validation, encryption parameters, per-volume locks, a logging gRPC interceptor and a unix-socket
// gRPC server. The driver's names are in internal/driver.
//
// The services themselves live in the sub-packages identity, controller and node.
package csi

import (
	"errors"
	"fmt"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// Names of the secrets the node service reads.
const (
	// SecretKeyPassphrase is the key of the node-stage and node-expand Secrets holding the passphrase of an
	// encrypted volume (its exact bytes, a trailing newline included).
	SecretKeyPassphrase = "key"
)

// Encryption values of driver.ParamEncryption.
const (
	// EncryptionLUKS2 puts a LUKS2 container (cryptsetup) on the LV; the filesystem or the raw block
	// device a pod sees is the dm-crypt mapping opened in NodeStageVolume.
	EncryptionLUKS2 = "luks2"
	// LUKS2HeaderSize is what cryptsetup's default LUKS2 header (metadata and keyslots) takes at the start
	// of the LV: the mapping is this much smaller than the LV.
	LUKS2HeaderSize = 16 * MiB
)

// ErrInvalidEncryption is wrapped by a refused driver.ParamEncryption value.
var ErrInvalidEncryption = errors.New("unsupported encryption")

// Encryption returns the encryption driver.ParamEncryption asks for in params (a StorageClass's parameters or a
// volume context): "" for none or EncryptionLUKS2; any other value is an error wrapping
// ErrInvalidEncryption.
func Encryption(params map[string]string) (string, error) {
	switch v := params[driver.ParamEncryption]; v {
	case "", EncryptionLUKS2:
		return v, nil
	default:
		return "", fmt.Errorf(
			"%w: %s %q (supported: %q)",
			ErrInvalidEncryption,
			driver.ParamEncryption,
			v,
			EncryptionLUKS2,
		)
	}
}

// Filesystem types the driver formats and mounts.
const (
	FSExt4  = "ext4"
	FSXFS   = "xfs"
	FSBtrfs = "btrfs"
	// DefaultFSType is used when neither the capability nor the parameters name a filesystem.
	DefaultFSType = FSExt4
)

// ErrInvalidCapability is wrapped by every capability validation failure.
var ErrInvalidCapability = errors.New("unsupported volume capability")

// ValidateCapabilities checks that caps is not empty and that every capability uses a supported access
// mode (one node: SINGLE_NODE_WRITER, SINGLE_NODE_MULTI_WRITER or SINGLE_NODE_SINGLE_WRITER), a
// supported access type and, for mounts, a supported filesystem. Because the driver advertises
// SINGLE_NODE_MULTI_WRITER (the CSI spec requires it before SINGLE_NODE_SINGLE_WRITER may be used),
// the external-provisioner and kubelet pass ReadWriteOnce as SINGLE_NODE_MULTI_WRITER: refusing it
// would refuse every ReadWriteOnce claim.
func ValidateCapabilities(caps []*spec.VolumeCapability) error {
	if len(caps) == 0 {
		return fmt.Errorf("%w: no volume capabilities given", ErrInvalidCapability)
	}
	for _, c := range caps {
		if err := ValidateCapability(c); err != nil {
			return err
		}
	}
	return nil
}

// ValidateCapability checks one capability (see ValidateCapabilities).
func ValidateCapability(c *spec.VolumeCapability) error {
	if c == nil {
		return fmt.Errorf("%w: nil capability", ErrInvalidCapability)
	}
	switch m := c.GetAccessMode().GetMode(); m {
	case spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		spec.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER,
		spec.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER:
	default:
		return fmt.Errorf("%w: access mode %s (a volume is on one node: only single-node access modes)",
			ErrInvalidCapability, m)
	}
	switch {
	case c.GetBlock() != nil:
		return nil
	case c.GetMount() != nil:
		if _, err := FSType(c, nil); err != nil {
			return err
		}
		return nil
	default:
		return fmt.Errorf("%w: neither block nor mount access type", ErrInvalidCapability)
	}
}

// IsBlock reports whether any capability asks for a raw block volume.
func IsBlock(caps ...*spec.VolumeCapability) bool {
	for _, c := range caps {
		if c.GetBlock() != nil {
			return true
		}
	}
	return false
}

// FSType returns the filesystem of a mount capability: its fs_type, else the driver.ParamFSType parameter,
// else DefaultFSType. It fails for filesystems the driver does not support.
func FSType(c *spec.VolumeCapability, params map[string]string) (string, error) {
	fs := c.GetMount().GetFsType()
	if fs == "" {
		fs = params[driver.ParamFSType]
	}
	if fs == "" {
		fs = DefaultFSType
	}
	switch fs {
	case FSExt4, FSXFS, FSBtrfs:
		return fs, nil
	default:
		return "", fmt.Errorf("%w: filesystem %q (supported: ext4, xfs, btrfs)", ErrInvalidCapability, fs)
	}
}
