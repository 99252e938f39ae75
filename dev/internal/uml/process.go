package uml

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// guestProc is a running linux.uml process group and its console.
type guestProc struct {
	cmd     *exec.Cmd
	stdinW  *os.File // kept open so the console never reads EOF
	conR    *os.File
	drained chan struct{}
	// exited is closed once UML has exited and been reaped. Its exit status carries no
	// information (UML exits 0 whatever the guest did), so it is not kept.
	exited chan struct{}
}

// startUML starts the UML process in its own process group with the console on a pipe copied
// into con.
func startUML(
	kernel string,
	args []string,
	preload, runDir string,
	serial []SerialLine,
	con *console,
) (*guestProc, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("console input pipe: %w", err)
	}
	conR, conW, err := os.Pipe()
	if err != nil {
		_ = stdinR.Close()
		_ = stdinW.Close()
		return nil, fmt.Errorf("console output pipe: %w", err)
	}
	// Not CommandContext: cancellation must kill the whole group, which boot does.
	cmd := exec.Command(kernel, args...)
	cmd.Dir = runDir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, conW, conW
	cmd.Env = os.Environ()
	if preload != "" {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+preload)
	}
	for _, s := range serial {
		cmd.ExtraFiles = append(cmd.ExtraFiles, s.File)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	_ = stdinR.Close()
	_ = conW.Close()
	if err != nil {
		_ = stdinW.Close()
		_ = conR.Close()
		return nil, fmt.Errorf("start %s: %w", kernel, err)
	}
	p := &guestProc{cmd: cmd, stdinW: stdinW, conR: conR, drained: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		_, _ = io.Copy(con, conR) // ends at EOF or when conR is closed
		con.flush()
		close(p.drained)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// killGroup kills every process left in the UML process group.
func (p *guestProc) killGroup() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// stop ends a guest that is still running: SIGTERM makes UML kill and reap its guest processes
// and exit; SIGKILL for the whole group follows if it does not exit within termGrace.
func (p *guestProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(termGrace):
		p.killGroup()
		<-p.exited
	}
}

// wait waits for UML to exit: normally after the exit marker and power-off; forcibly when ctx
// ends or power-off takes too long. It returns ctx's error if ctx ended the run.
func (p *guestProc) wait(ctx context.Context, con *console) error {
	var ctxErr error
	select {
	case <-p.exited:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		p.stop()
	case <-con.exitSeen:
		select {
		case <-p.exited:
		case <-time.After(shutdownGrace):
			p.stop()
		case <-ctx.Done():
			p.stop()
		}
	}
	// Guest processes are host processes in our group; none may outlive the run.
	p.killGroup()
	select {
	case <-p.drained:
	case <-time.After(drainGrace):
	}
	_ = p.conR.Close()
	_ = p.stdinW.Close()
	<-p.drained
	return ctxErr
}

// boot runs UML with the prepared arguments and turns the console into a Result.
func boot(ctx context.Context, opts Options, kernel string, args []string, preload, runDir string) (*Result, error) {
	con := newConsole(opts.Stdout, opts.ShowBoot, time.Now)
	start := time.Now()
	p, err := startUML(kernel, args, preload, runDir, opts.SerialLines, con)
	if err != nil {
		return nil, err
	}
	ctxErr := p.wait(ctx, con)
	end := time.Now()

	st := con.state()
	res := &Result{ExitCode: -1, Output: st.output, Total: end.Sub(start)}
	if !st.started.IsZero() {
		res.Boot = st.started.Sub(start)
	}
	if !st.exited.IsZero() {
		res.ExitCode = st.exitCode
		if !st.started.IsZero() {
			res.Command = st.exited.Sub(st.started)
		}
	}
	switch {
	case !st.exited.IsZero():
		return res, nil
	case ctxErr != nil:
		return res, fmt.Errorf("guest stopped after %s: %w; last console lines:\n%s",
			res.Total.Round(time.Millisecond), ctxErr, tail(st.output, 20))
	case st.setupFailed != "":
		return res, fmt.Errorf("%w: guest init failed: %s", ErrNoExitCode, st.setupFailed)
	default:
		return res, fmt.Errorf("%w; last console lines:\n%s", ErrNoExitCode, tail(st.output, 20))
	}
}
