package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

const (
	// maxGrace caps the termination grace period: dev-cluster tests should not wait 30 s.
	maxGrace = 10 * time.Second
	// tailInterval is how often the log-tail annotation follows a running process.
	tailInterval = 5 * time.Second
	// restart backoff bounds (kubelet: 10 s to 5 min).
	restartInitial = time.Second
	restartLimit   = 30 * time.Second
	basePath       = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// runPod sets up the volumes and runs the first container until it finishes for good or the pod's
// life ends.
func (w *podWorker) runPod(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx)
	k := w.k
	pod := w.latest()
	report := func(st runState) {
		if err := k.setPodStatus(w.life, pod, st); err != nil && w.life.Err() == nil {
			log.Error(err, "Pod status update failed", "phase", st.phase)
		}
	}
	report(runState{phase: corev1.PodPending, reason: "ContainerCreating"})
	var vols []podVolume
	err := retryUntil(w.life, k.clock, func() error {
		var err error
		if vols, err = k.volumes.Setup(w.life, pod); err != nil {
			report(runState{phase: corev1.PodPending, reason: "ContainerCreating", message: err.Error()})
		}
		return err
	})
	if err != nil {
		return
	}
	log.Info("Pod volumes ready", "volumes", len(vols))
	for _, v := range vols {
		if v.csiVolume() {
			k.expandClaim(w.life, v.Claim)
		}
	}
	spec, err := k.processSpec(pod, vols)
	if err != nil {
		report(runState{phase: corev1.PodFailed, reason: "CreateContainerError", message: err.Error(),
			exit: &exitInfo{code: 128, message: err.Error()}})
		return
	}
	out, err := openLog(k.logPath(pod))
	if err != nil {
		report(runState{phase: corev1.PodFailed, reason: "CreateContainerError", message: err.Error(),
			exit: &exitInfo{code: 128, message: err.Error()}})
		return
	}
	defer out.Close() //nolint:errcheck // append-only log, every write already reached the file
	spec.Output = out
	w.runLoop(ctx, pod, spec, report)
}

// runLoop starts the process and restarts it as the restart policy says.
func (w *podWorker) runLoop(ctx context.Context, pod *corev1.Pod, spec ProcessSpec, report func(runState)) {
	k := w.k
	st := runState{}
	backoff := restartInitial
	for {
		started := k.clock.Now()
		code, msg := 128, ""
		proc, err := k.runner.Start(w.life, spec)
		if err == nil {
			report(runState{phase: corev1.PodRunning, started: started, restarts: st.restarts, last: st.last})
			code, err = w.waitAndTail(pod, proc)
		}
		if err != nil {
			msg = err.Error()
		}
		if w.life.Err() != nil {
			return
		}
		exit := &exitInfo{code: int32(code), started: started, finished: k.clock.Now(), message: msg}
		exit.tail = tailFile(k.logPath(pod), k.cfg.LogTailLines)
		k.annotateTail(w.life, pod, exit.tail)
		ctrl.LoggerFrom(ctx).Info("Pod process exited", "exitCode", code, "restarts", st.restarts)
		if !restarts(pod.Spec.RestartPolicy, code) {
			phase := corev1.PodSucceeded
			if code != 0 {
				phase = corev1.PodFailed
			}
			report(runState{phase: phase, restarts: st.restarts, exit: exit, last: st.last})
			return
		}
		st.restarts++
		st.last = exit
		report(runState{phase: corev1.PodRunning, reason: "CrashLoopBackOff", restarts: st.restarts, last: exit,
			message: fmt.Sprintf("back-off %s restarting failed container", backoff)})
		select {
		case <-w.life.Done():
			return
		case <-k.clock.After(backoff):
		}
		backoff = min(2*backoff, restartLimit)
	}
}

// waitAndTail waits for the process, refreshing the log-tail annotation while it runs.
func (w *podWorker) waitAndTail(pod *corev1.Pod, proc Process) (int, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := w.k.clock.NewTicker(tailInterval)
		defer t.Stop()
		last := ""
		for {
			select {
			case <-done:
				return
			case <-w.life.Done():
				return
			case <-t.C():
				if tail := tailFile(w.k.logPath(pod), w.k.cfg.LogTailLines); tail != last {
					last = tail
					w.k.annotateTail(w.life, pod, tail)
				}
			}
		}
	}()
	return proc.Wait()
}

// restarts reports whether a process that exited with code runs again under policy.
func restarts(policy corev1.RestartPolicy, code int) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}

// openLog opens the pod's log file for appending, creating its directory.
func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// processSpec derives the process of the pod's first container: command and args, environment,
// working directory and the volume mounts and devices.
func (k *Kubelet) processSpec(pod *corev1.Pod, vols []podVolume) (ProcessSpec, error) {
	if len(pod.Spec.Containers) == 0 {
		return ProcessSpec{}, fmt.Errorf("pod has no containers")
	}
	c := pod.Spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(c.Command) == 0 {
		return ProcessSpec{}, fmt.Errorf("container %s has no command: the dev kubelet runs commands, not images", c.Name)
	}
	byName := map[string]podVolume{}
	for _, v := range vols {
		byName[v.Name] = v
	}
	spec := ProcessSpec{Argv: argv, Env: podEnv(pod, c), WorkingDir: c.WorkingDir, Grace: grace(pod)}
	for _, vm := range c.VolumeMounts {
		v, ok := byName[vm.Name]
		if !ok || v.Block {
			continue // a volume type the dev kubelet does not provide (service account token, configMap...)
		}
		host := v.Path
		if vm.SubPath != "" {
			host = filepath.Join(host, vm.SubPath)
			if err := os.MkdirAll(host, 0o750); err != nil {
				return ProcessSpec{}, fmt.Errorf("create subPath %s: %w", vm.SubPath, err)
			}
		}
		spec.Mounts = append(spec.Mounts, Mount{HostPath: host, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly || v.ReadOnly})
	}
	for _, vd := range c.VolumeDevices {
		if v, ok := byName[vd.Name]; ok && v.Block {
			spec.Mounts = append(spec.Mounts, Mount{HostPath: v.Path, ContainerPath: vd.DevicePath, File: true, ReadOnly: v.ReadOnly})
		}
	}
	return spec, nil
}

// podEnv is the container's environment: PATH, HOSTNAME, then literal values and the downward API
// fields a dev cluster knows. Secret and ConfigMap references and $(VAR) expansion are not supported.
func podEnv(pod *corev1.Pod, c corev1.Container) []string {
	env := []string{"PATH=" + basePath, "HOSTNAME=" + pod.Name}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil:
			if v, ok := fieldValue(pod, e.ValueFrom.FieldRef.FieldPath); ok {
				env = append(env, e.Name+"="+v)
			}
		}
	}
	return env
}

func fieldValue(pod *corev1.Pod, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "status.podIP", "status.hostIP":
		return loopbackIP, true
	}
	return "", false
}

// grace is the pod's termination grace period, capped at maxGrace.
func grace(pod *corev1.Pod) time.Duration {
	g := maxGrace
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		g = min(g, time.Duration(*s)*time.Second)
	}
	return g
}
