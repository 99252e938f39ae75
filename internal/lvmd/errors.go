package lvmd

import (
	"errors"
	"fmt"
)

// Sentinel errors of the service; test with errors.Is. The gRPC server maps
// them to status codes and ErrorInfo reasons (the table in reasons.go) and the
// Client maps the reasons back.
var (
	// ErrNotFound: the LV (or a snapshot's source) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInsufficientCapacity: the device class lacks the capacity asked
	// for (gRPC ResourceExhausted).
	ErrInsufficientCapacity = errors.New("insufficient capacity")
	// ErrInvalidArgument: the request or the configuration is invalid.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnknownDeviceClass: no such device class (also ErrInvalidArgument).
	ErrUnknownDeviceClass = fmt.Errorf("%w: unknown device class", ErrInvalidArgument)
	// ErrAlreadyExists: an LV of that name exists with another size or
	// kind.
	ErrAlreadyExists = errors.New("already exists")
	// ErrNotOurs: the LV exists but does not carry lvmd's ownership tag, so
	// lvmd will not touch it.
	ErrNotOurs = errors.New("not managed by lvms")
	// ErrInUse: the LV cannot be removed now (it is open, or it is the
	// origin of copy-on-write snapshots, which lvremove would remove with
	// it).
	ErrInUse = errors.New("in use")
	// ErrNotReady: the device class's VG or thin pool does not exist (yet).
	ErrNotReady = errors.New("device class not ready")
	// ErrClassesPending (also ErrNotReady): the device classes themselves
	// are not known yet (a node agent that has just started), so nothing can
	// be said about any LV: not even that it does not exist.
	ErrClassesPending = fmt.Errorf("%w: the device classes of this node are not loaded yet", ErrNotReady)
)
