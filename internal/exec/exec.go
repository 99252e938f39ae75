// Package exec is the single way the operator runs host commands (lvm, lsblk,
// blkid, wipefs, dmsetup, mkfs, ...).
//
// Every command goes through an Executor. The production implementation,
// Host, runs commands with a fixed environment (LC_ALL=C so messages can be
// classified), an optional command prefix (nsenter into the host's namespaces
// when running in a pod), streams stdout into a caller-supplied decoder,
// captures stderr into a typed *Error, and counts executions per command
// name. Package exectest provides a scripted fake for unit tests.
package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Cmd describes one command execution.
type Cmd struct {
	// Name is the program to run, e.g. "lvm". It is looked up in PATH.
	Name string
	// Args are the arguments after Name.
	Args []string
	// Stdin, if not nil, is fed to the command's standard input.
	Stdin io.Reader
	// Stdout, if not nil, consumes the command's standard output while the
	// command runs. Whatever it leaves unread is drained and discarded before
	// the command is waited for. If nil, stdout is discarded.
	Stdout func(io.Reader) error
}

// String renders the command line for logs and errors.
func (c Cmd) String() string {
	return CommandLine(c.Name, c.Args)
}

// CommandLine renders name and args as a shell-like command line (for humans,
// not for a shell).
func CommandLine(name string, args []string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		b.WriteByte(' ')
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\|&;<>()$`*?[]{}") {
			fmt.Fprintf(&b, "%q", a)
			continue
		}
		b.WriteString(a)
	}
	return b.String()
}

// Executor runs host commands. Implementations must be safe for concurrent
// use.
//
// Exec returns nil when the command ran and exited 0 and Cmd.Stdout (if any)
// returned nil. A command that ran and failed yields an *Error (use errors.As
// or the helpers in this package); a Cmd.Stdout failure is returned wrapped.
type Executor interface {
	Exec(ctx context.Context, cmd Cmd) error
}

// Run runs name with args and returns its standard output.
func Run(ctx context.Context, e Executor, name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := e.Exec(ctx, Cmd{Name: name, Args: args, Stdout: func(r io.Reader) error {
		_, err := out.ReadFrom(r)
		return err
	}})
	return out.Bytes(), err
}

// RunStdin runs name with args, feeding stdin to it, and returns its standard
// output.
func RunStdin(ctx context.Context, e Executor, stdin io.Reader, name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := e.Exec(ctx, Cmd{Name: name, Args: args, Stdin: stdin, Stdout: func(r io.Reader) error {
		_, err := out.ReadFrom(r)
		return err
	}})
	return out.Bytes(), err
}

// RunJSON runs name with args and decodes its standard output as one JSON
// value into into, streaming (the output is never held in memory as a whole).
func RunJSON(ctx context.Context, e Executor, into any, name string, args ...string) error {
	return e.Exec(ctx, Cmd{Name: name, Args: args, Stdout: func(r io.Reader) error {
		if err := json.NewDecoder(r).Decode(into); err != nil {
			return fmt.Errorf("decode JSON output: %w", err)
		}
		return nil
	}})
}
