package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	ctrl "sigs.k8s.io/controller-runtime"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// Encrypted volumes (StorageClass parameter topolvm.io/encryption: luks2) carry a LUKS2 container on the
// LV. NodeStageVolume formats a blank LV with it and opens it as the dm-crypt mapping
// /dev/mapper/lvms-<volume ID>; NodePublishVolume mounts (or bind-mounts) the mapping instead of the LV;
// NodeUnstageVolume closes it; NodeExpandVolume resizes it. The passphrase reaches cryptsetup on its
// standard input only (--key-file=-): never in argv, the environment, a log line or a file.

// luksFormatArgs fix what a new LUKS2 container is made with, instead of each host's cryptsetup
// defaults: AES-XTS with a 512-bit key (AES-256), and argon2id whose memory is capped at 64 MiB
// with one thread (cryptsetup would take up to 1 GiB and 4 threads, per open, on a node whose
// agent has no memory limit); the time cost stays cryptsetup's benchmark of 2 s on this node.
var luksFormatArgs = []string{"--type", "luks2", "--batch-mode", "--cipher", "aes-xts-plain64",
	"--key-size", "512", "--hash", "sha256", "--pbkdf", "argon2id", "--pbkdf-memory", "65536",
	"--pbkdf-parallel", "1", "--key-file=-"}

// maxKeyDerivations is how many luksFormat or open commands of a node agent run at once: each
// derives a key with the container's argon2id parameters, up to 1 GiB for a container made
// elsewhere, so a node staging many encrypted volumes at once would otherwise sum their memory.
const maxKeyDerivations = 2

// Errors of encrypted volumes the RPC methods map to gRPC codes.
var (
	// errMissingKey: the node-stage secret has no passphrase (InvalidArgument).
	errMissingKey = errors.New("no passphrase")
	// errWrongKey: the passphrase opens no keyslot of the LUKS2 header (PermissionDenied).
	errWrongKey = errors.New("the passphrase does not open the volume")
	// errNotStaged: an encrypted volume's mapping is not open (FailedPrecondition).
	errNotStaged = errors.New("encrypted volume is not staged")
	// errInUse: the mapping is still mounted or open (FailedPrecondition).
	errInUse = errors.New("still in use")
)

const (
	// mapperDir holds the device nodes of dm-crypt mappings.
	mapperDir = "/dev/mapper"
	// mappingPrefix starts the names of the mappings of encrypted volumes.
	mappingPrefix = "lvms-"
	// luksType is blkid's TYPE of a LUKS (1 or 2) header.
	luksType = "crypto_LUKS"
)

// cryptsetup's exit statuses (cryptsetup(8) "RETURN CODES").
const (
	cryptNoPermission = 2 // wrong passphrase
	cryptWrongDevice  = 4 // the mapping is not active (status, close)
	cryptBusy         = 5 // the mapping is in use (close) or exists already (open)
)

// plainVolumeID and maxPlainVolumeID: what a volume ID may be to appear as it is in a mapping
// name. The length is checked apart, as a counted repetition compiles into that many copies.
var plainVolumeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

const maxPlainVolumeID = 100

// mappingName is the dm-crypt mapping of volume id: lvms-<id>, or lvms-<digest of id> for an ID that
// is long or holds characters a device-mapper name should not (dm names end at 127 bytes).
func mappingName(id string) string {
	if len(id) <= maxPlainVolumeID && plainVolumeID.MatchString(id) {
		return mappingPrefix + id
	}
	sum := sha256.Sum256([]byte(id))
	return mappingPrefix + hex.EncodeToString(sum[:20])
}

// mappingPath is the device node of the mapping name.
func mappingPath(name string) string { return mapperDir + "/" + name }

// mappingActive reports whether the dm-crypt mapping name is open. A mapping without a device node
// in the mapper directory is not open (device-mapper creates the node with every mapping, through
// udev or itself), and cryptsetup is asked only when there is one: NodeUnstageVolume and
// NodeExpandVolume look for the mapping of every volume, and most are not encrypted (one cryptsetup
// per volume took 3-16 s on a busy node in the benchmark). A host without cryptsetup cannot have
// opened one.
func (s *Server) mappingActive(ctx context.Context, name string) (bool, error) {
	if _, err := os.Lstat(filepath.Join(s.mapperDir, name)); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	_, err := exec.Run(ctx, s.exec, "cryptsetup", "status", name)
	switch {
	case err == nil:
		return true, nil
	case exec.HasExitCode(err, cryptWrongDevice), exec.IsProgramNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("status of dm-crypt mapping %s: %w", name, err)
	}
}

// openLUKS opens the LUKS2 container on dev as mapping name with key, formatting dev first when it
// carries no signature at all (a new LV). A device carrying anything else than a LUKS header is refused
// and left untouched. An open mapping is left as it is.
func (s *Server) openLUKS(ctx context.Context, dev, name string, key []byte) (formatted bool, err error) {
	if active, err := s.mappingActive(ctx, name); err != nil || active {
		return false, err
	}
	existing, _, err := s.detectFilesystem(ctx, dev)
	if err != nil {
		return false, err
	}
	switch existing {
	case luksType:
	case "":
		args := append(append([]string{"luksFormat"}, luksFormatArgs...), dev)
		if err := s.cryptsetup(ctx, key, args...); err != nil {
			return false, fmt.Errorf("format %s as LUKS2: %w", dev, err)
		}
		formatted = true
	default:
		return false, fmt.Errorf("%w: %s holds %s, not a LUKS header; refusing to encrypt it",
			errFilesystemMismatch, dev, existing)
	}
	err = s.cryptsetup(ctx, key, "open", "--type", "luks2", "--key-file=-", dev, name)
	switch {
	case exec.HasExitCode(err, cryptNoPermission):
		return formatted, fmt.Errorf("open %s: %w (check the key of the node-stage secret): %w", dev, errWrongKey, err)
	case exec.HasExitCode(err, cryptBusy):
		// Opened meanwhile, or the name is taken by another device: only an active mapping will do.
		if active, aerr := s.mappingActive(ctx, name); aerr != nil || !active {
			return formatted, errors.Join(fmt.Errorf("open %s as %s: %w", dev, name, err), aerr)
		}
	case err != nil:
		return formatted, fmt.Errorf("open %s as %s: %w", dev, name, err)
	}
	return formatted, nil
}

// closeLUKS closes the mapping name; one that is not open is a success. A mapping still mounted or
// held open is refused with errInUse.
func (s *Server) closeLUKS(ctx context.Context, name string) (closed bool, err error) {
	active, err := s.mappingActive(ctx, name)
	if err != nil || !active {
		return false, err
	}
	_, err = exec.Run(ctx, s.exec, "cryptsetup", "close", name)
	switch {
	case err == nil:
		return true, nil
	case exec.HasExitCode(err, cryptWrongDevice):
		return false, nil
	case exec.HasExitCode(err, cryptBusy):
		return false, fmt.Errorf("close dm-crypt mapping %s: %w (unpublish it first): %w", name, errInUse, err)
	default:
		return false, fmt.Errorf("close dm-crypt mapping %s: %w", name, err)
	}
}

// stagedMapping returns the device of the open mapping of the encrypted volume id, errNotStaged when
// it is not open.
func (s *Server) stagedMapping(ctx context.Context, id string) (string, error) {
	name := mappingName(id)
	active, err := s.mappingActive(ctx, name)
	if err != nil {
		return "", err
	}
	if !active {
		return "", fmt.Errorf("volume %s: %w: dm-crypt mapping %s is not open (NodeStageVolume opens it)",
			id, errNotStaged, name)
	}
	return mappingPath(name), nil
}

// resizeMapping grows the open mapping of volume id to its LV (after the LV grew) and returns the
// mapping's device; for a volume without an open mapping (not encrypted) it returns dev unchanged.
// LUKS2 keeps the volume key in the kernel keyring, where `cryptsetup resize` wants the passphrase:
// the node-expand secret's key when there is one.
func (s *Server) resizeMapping(ctx context.Context, id, dev string, secrets map[string]string) (string, error) {
	name := mappingName(id)
	active, err := s.mappingActive(ctx, name)
	if err != nil || !active {
		return dev, err
	}
	var key []byte
	args := []string{"resize", name}
	if k := secrets[lvmcsi.SecretKeyPassphrase]; k != "" {
		key = []byte(k)
		args = append(args, "--key-file=-")
	}
	if err := s.cryptsetup(ctx, key, args...); err != nil {
		if exec.HasExitCode(err, cryptNoPermission) {
			return "", fmt.Errorf("resize dm-crypt mapping %s: %w (check the key of the node-expand secret): %w",
				name, errWrongKey, err)
		}
		if key == nil {
			return "", fmt.Errorf("resize dm-crypt mapping %s without a passphrase (LUKS2 keeps the volume key in "+
				"the kernel keyring, where cryptsetup resize wants the passphrase: give the StorageClass "+
				"csi.storage.k8s.io/node-expand-secret-name and -namespace): %w", name, err)
		}
		return "", fmt.Errorf("resize dm-crypt mapping %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Resized dm-crypt mapping", "volumeID", id, "mapping", name)
	return mappingPath(name), nil
}

// cryptsetup runs cryptsetup with args, feeding key (if any) on its standard input. A missing
// cryptsetup is errUnsupported.
func (s *Server) cryptsetup(ctx context.Context, key []byte, args ...string) error {
	if args[0] == "luksFormat" || args[0] == "open" {
		select {
		case s.kdf <- struct{}{}:
			defer func() { <-s.kdf }()
		case <-ctx.Done():
			return fmt.Errorf("wait for a key derivation slot (%d at once): %w", maxKeyDerivations, ctx.Err())
		}
	}
	var err error
	if key != nil {
		_, err = exec.RunStdin(ctx, s.exec, bytes.NewReader(key), "cryptsetup", args...)
	} else {
		_, err = exec.Run(ctx, s.exec, "cryptsetup", args...)
	}
	if exec.IsProgramNotFound(err) {
		return fmt.Errorf("%w: encrypted volumes (cryptsetup is not installed): %w", errUnsupported, err)
	}
	return err
}
