// Package mustgather collects what a support case needs about the LVM storage of a cluster into one
// gzip-compressed tarball (kubectl lvms must-gather): the product's objects and the Kubernetes objects
// of its volumes, the events about them, the logs of every container in the product's namespace, and
// from every node, through its node agent's pod, the host's lvm2 and block device state.
//
// It only reads, and it never reads a Secret: no Secret is listed or fetched, and no command it runs on
// a node prints key material (dmsetup table, which can show dm-crypt keys, is not run). What it cannot
// collect (forbidden, not installed, a node without a running agent, a command that failed) is listed
// in errors.txt inside the tarball, and everything else is still collected.
package mustgather

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Root is the directory every file of the tarball is in.
const Root = "must-gather"

// Defaults of Options.
const (
	DefaultLogLimitBytes  = 20 << 20
	DefaultNodeParallel   = 4
	DefaultCommandTimeout = time.Minute
)

// Options configure a gather.
type Options struct {
	// OperatorNamespace is the product's namespace: its pods' logs and its objects are collected.
	OperatorNamespace string
	// Since limits the logs to those newer than this (0: all the kubelet keeps); LogLimitBytes bounds
	// each container's log (DefaultLogLimitBytes when 0).
	Since         time.Duration
	LogLimitBytes int64
	// NodeParallel is how many nodes are asked at once; CommandTimeout bounds each command on a node.
	NodeParallel   int
	CommandTimeout time.Duration
	// Now is the clock of the tarball's file times (time.Now when nil).
	Now func() time.Time
}

// Summary is what a gather collected.
type Summary struct {
	// Files is the number of files in the tarball, Bytes their size before compression.
	Files int
	Bytes int64
	// Nodes are the nodes whose host state was collected.
	Nodes []string
	// Problems are what could not be collected (also in errors.txt).
	Problems []string
}

// Gatherer collects through c (objects), cs (container logs) and exec (commands in node agent pods).
type Gatherer struct {
	c    client.Reader
	cs   kubernetes.Interface
	exec Exec
	o    Options
}

// New is a Gatherer with o's zero fields set to their defaults.
func New(c client.Reader, cs kubernetes.Interface, exec Exec, o Options) *Gatherer {
	if o.LogLimitBytes == 0 {
		o.LogLimitBytes = DefaultLogLimitBytes
	}
	if o.NodeParallel <= 0 {
		o.NodeParallel = DefaultNodeParallel
	}
	if o.CommandTimeout == 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Gatherer{c: c, cs: cs, exec: exec, o: o}
}

// Run writes the tarball (tar.gz) to w. It fails only when w fails or ctx ends; what could not be
// collected is in the summary's Problems and in errors.txt.
func (g *Gatherer) Run(ctx context.Context, w io.Writer) (*Summary, error) {
	a := newArchive(w, g.o.Now())
	s := &Summary{}
	seen, err := g.objects(ctx, a)
	if err != nil {
		return nil, err
	}
	if err := g.logs(ctx, a); err != nil {
		return nil, err
	}
	if s.Nodes, err = g.nodes(ctx, a, seen); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("must-gather: %w", err)
	}
	s.Problems = a.problems()
	body := "nothing: every object, log and node command was collected\n"
	if len(s.Problems) > 0 {
		body = strings.Join(s.Problems, "\n") + "\n"
	}
	if err := a.add("errors.txt", []byte(body)); err != nil {
		return nil, err
	}
	s.Files, s.Bytes = a.files, a.bytes
	return s, a.close()
}

// archive is the tarball being written: every file under Root, with the gather's time.
type archive struct {
	gz    *gzip.Writer
	tw    *tar.Writer
	time  time.Time
	files int
	bytes int64

	mu      sync.Mutex
	problem []string
}

func newArchive(w io.Writer, now time.Time) *archive {
	gz := gzip.NewWriter(w)
	return &archive{gz: gz, tw: tar.NewWriter(gz), time: now.UTC()}
}

// add writes one file (name is relative to Root). A failed write ends the gather.
func (a *archive) add(name string, data []byte) error {
	hdr := &tar.Header{Name: path.Join(Root, name), Mode: 0o644, Size: int64(len(data)), ModTime: a.time,
		Typeflag: tar.TypeReg}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write %s: %w", hdr.Name, err)
	}
	if _, err := a.tw.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", hdr.Name, err)
	}
	a.files++
	a.bytes += int64(len(data))
	return nil
}

// failed records what could not be collected, and why.
func (a *archive) failed(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.problem = append(a.problem, fmt.Sprintf(format, args...))
}

func (a *archive) problems() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.problem)
}

func (a *archive) close() error {
	if err := a.tw.Close(); err != nil {
		return fmt.Errorf("finish the tarball: %w", err)
	}
	if err := a.gz.Close(); err != nil {
		return fmt.Errorf("finish the tarball: %w", err)
	}
	return nil
}
