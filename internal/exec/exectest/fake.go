// Package exectest provides a scripted fake exec.Executor for unit tests.
//
// Responses are keyed by the full command line (name and arguments). Each
// key holds a queue of responses; the last one repeats. Commands without a
// scripted response go to the Handler, if set, or fail the call with an
// error naming the unexpected command line. Every call is recorded.
package exectest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// Response is what a faked command does.
type Response struct {
	// Stdout is written to the command's standard output.
	Stdout string
	// ExitCode, when non-zero, makes the command fail with an *exec.Error.
	ExitCode int
	// Stderr is the standard error carried by the *exec.Error.
	Stderr string
	// Err, when set, is returned as is (e.g. a context error).
	Err error
}

// OK returns a successful Response printing stdout.
func OK(stdout string) Response { return Response{Stdout: stdout} }

// Fail returns a failing Response with exit code and stderr.
func Fail(exitCode int, stderr string) Response {
	return Response{ExitCode: exitCode, Stderr: stderr}
}

// Call is one recorded execution.
type Call struct {
	Name  string
	Args  []string
	Stdin string
}

// Line renders the call as a command line.
func (c Call) Line() string { return exec.CommandLine(c.Name, c.Args) }

// Fake is a scripted exec.Executor. Use New; it is safe for concurrent use.
type Fake struct {
	// Handler answers commands that have no scripted response. If nil,
	// unscripted commands fail.
	Handler func(Call) Response

	mu        sync.Mutex
	responses map[string][]Response
	calls     []Call
}

// New returns an empty Fake.
func New() *Fake {
	return &Fake{responses: map[string][]Response{}}
}

// On queues r as the response to the command name args.
func (f *Fake) On(r Response, name string, args ...string) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := exec.CommandLine(name, args)
	f.responses[key] = append(f.responses[key], r)
	return f
}

// Calls returns the recorded calls in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Lines returns the recorded calls as command lines.
func (f *Fake) Lines() []string {
	calls := f.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Line()
	}
	return out
}

// Count returns how many calls ran the program name.
func (f *Fake) Count(name string) int {
	n := 0
	for _, c := range f.Calls() {
		if c.Name == name {
			n++
		}
	}
	return n
}

// Reset forgets recorded calls (scripted responses stay).
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// Exec implements exec.Executor.
func (f *Fake) Exec(ctx context.Context, c exec.Cmd) error {
	if err := ctx.Err(); err != nil {
		return &exec.Error{Cmd: c.Name, Args: c.Args, ExitCode: -1, Err: err}
	}
	call := Call{Name: c.Name, Args: slices.Clone(c.Args)}
	if c.Stdin != nil {
		b, err := io.ReadAll(c.Stdin)
		if err != nil {
			return fmt.Errorf("exectest: read stdin: %w", err)
		}
		call.Stdin = string(b)
	}
	r, ok := f.respond(call)
	if !ok {
		if f.Handler == nil {
			return fmt.Errorf("exectest: unexpected command %q", call.Line())
		}
		r = f.Handler(call)
	}
	if r.Err != nil {
		return r.Err
	}
	var consumeErr error
	if c.Stdout != nil {
		consumeErr = c.Stdout(bytes.NewReader([]byte(r.Stdout)))
	}
	if r.ExitCode != 0 {
		return &exec.Error{
			Cmd: c.Name, Args: call.Args, ExitCode: r.ExitCode, Stderr: r.Stderr,
			Err: fmt.Errorf("exit status %d", r.ExitCode),
		}
	}
	if consumeErr != nil {
		return fmt.Errorf("%s: read output: %w", call.Line(), consumeErr)
	}
	return nil
}

func (f *Fake) respond(call Call) (Response, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	key := call.Line()
	q := f.responses[key]
	if len(q) == 0 {
		return Response{}, false
	}
	if len(q) > 1 {
		f.responses[key] = q[1:]
	}
	return q[0], true
}

// Diff compares the recorded calls of f with want (command lines, in order)
// and returns a readable difference, or "" when they match.
func Diff(f *Fake, want ...string) string {
	got := f.Lines()
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("calls differ:\n got:\n  %s\nwant:\n  %s",
		strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}
