package exec

import (
	"errors"
	"fmt"
	"io/fs"
	osexec "os/exec"
	"strings"
)

// ErrTimeout is in the chain of the error of a command that ran past its
// deadline (Host.Timeout) and was killed.
var ErrTimeout = errors.New("command timed out")

// Error is returned when a command ran (or could not be started) and failed.
type Error struct {
	// Cmd is the command name without the prefix, e.g. "lvm".
	Cmd string
	// Args are the command's arguments.
	Args []string
	// ExitCode is the exit status, or -1 when the command did not exit
	// normally (not started, killed by a signal, context cancelled).
	ExitCode int
	// Stderr is the captured standard error (truncated to a bounded size).
	Stderr string
	// Err is the underlying error from os/exec or the context.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(CommandLine(e.Cmd, e.Args))
	if e.ExitCode >= 0 {
		fmt.Fprintf(&b, ": exit status %d", e.ExitCode)
	} else if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(": ")
		b.WriteString(strings.Join(strings.Fields(s), " "))
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ExitCode returns the exit status of the failed command in err's chain, or
// -1 when err carries no exit status.
func ExitCode(err error) int {
	if e, ok := AsError(err); ok {
		return e.ExitCode
	}
	return -1
}

// HasExitCode reports whether err is a command failure with exit status code.
func HasExitCode(err error, code int) bool {
	e, ok := AsError(err)
	return ok && e.ExitCode == code
}

// StderrContains reports whether err is a command failure whose stderr
// contains any of substrs, compared case-insensitively.
func StderrContains(err error, substrs ...string) bool {
	e, ok := AsError(err)
	if !ok {
		return false
	}
	stderr := strings.ToLower(e.Stderr)
	for _, s := range substrs {
		if strings.Contains(stderr, strings.ToLower(s)) {
			return true
		}
	}
	return false
}

// IsProgramNotFound reports whether err is a command whose program does not
// exist on the host: not found in PATH, or exit status 127 from a prefix such
// as nsenter (or a shell) that could not exec it.
func IsProgramNotFound(err error) bool {
	if errors.Is(err, osexec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return HasExitCode(err, 127)
}
