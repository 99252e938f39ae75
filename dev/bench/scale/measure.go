package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sample is one reading of the operator process.
type sample struct {
	At  time.Time
	RSS uint64  // bytes
	CPU float64 // seconds of CPU since the process started
}

// sampler reads the operator's RSS and CPU time every second.
type sampler struct {
	pid int
	mu  sync.Mutex
	all []sample
}

func newSampler(pid int) *sampler { return &sampler{pid: pid} }

func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if v, err := readProc(s.pid); err == nil {
			s.mu.Lock()
			s.all = append(s.all, v)
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readProc reads VmRSS from /proc/<pid>/status and utime+stime from /proc/<pid>/stat.
func readProc(pid int) (sample, error) {
	s := sample{At: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("read status: %w", err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return s, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			s.RSS = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("read stat: %w", err)
	}
	// Fields after the command name (which may hold spaces) start at state, field 3.
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat)[i+1:])
	if len(f) < 13 {
		return s, fmt.Errorf("short stat %q", stat)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("stat times %q %q", f[11], f[12])
	}
	s.CPU = float64(utime+stime) / 100 // USER_HZ is 100 on Linux
	return s, nil
}

// usage is the operator's resources over a window.
type usage struct {
	PeakRSS uint64  `json:"peakRSSBytes"`
	EndRSS  uint64  `json:"endRSSBytes"`
	CPU     float64 `json:"cpuSeconds"`
	Cores   float64 `json:"cpuCores"` // CPU seconds per second of the window
}

// window returns the usage between from and to.
func (s *sampler) window(from, to time.Time) usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var u usage
	var first, last *sample
	for i := range s.all {
		v := &s.all[i]
		if v.At.Before(from) || v.At.After(to) {
			continue
		}
		if first == nil {
			first = v
		}
		last = v
		u.PeakRSS = max(u.PeakRSS, v.RSS)
	}
	if first == nil || last == first {
		return u
	}
	u.EndRSS, u.CPU = last.RSS, last.CPU-first.CPU
	u.Cores = u.CPU / last.At.Sub(first.At).Seconds()
	return u
}

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmark reads.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// requestCount is the requests of one user, verb and resource.
type requestCount struct {
	User     string  `json:"user"`
	Verb     string  `json:"verb"`
	Resource string  `json:"resource"`
	Count    int     `json:"count"`
	Errors   int     `json:"errors"` // responses of 400 and above (409 conflicts among them)
	PerSec   float64 `json:"perSecond"`
}

// auditReader counts the audit log's events since its last call.
type auditReader struct {
	path   string
	offset int64
	last   time.Time
}

// take counts the requests logged since the previous take (or since the log began), per user,
// verb and resource, for ourUsers; rates are over the wall time since the previous take.
func (a *auditReader) take() ([]requestCount, time.Duration, error) {
	now := time.Now()
	elapsed := now.Sub(a.last)
	if a.last.IsZero() {
		elapsed = 0
	}
	a.last = now
	f, err := os.Open(a.path)
	if err != nil {
		return nil, elapsed, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return nil, elapsed, fmt.Errorf("seek audit log: %w", err)
	}
	counts, n, err := countAudit(f)
	a.offset += n
	if err != nil {
		return nil, elapsed, err
	}
	for i := range counts {
		if elapsed > 0 {
			counts[i].PerSec = float64(counts[i].Count) / elapsed.Seconds()
		}
	}
	return counts, elapsed, nil
}

// countAudit tallies the complete lines of r (a partial last line is left for the next call) and
// returns the bytes consumed.
func countAudit(r io.Reader) ([]requestCount, int64, error) {
	type k struct{ user, verb, res string }
	tally := map[k]*requestCount{}
	br := bufio.NewReaderSize(r, 1<<20)
	var consumed int64
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			break // a partial line stays for the next call
		}
		if err != nil {
			return nil, consumed, fmt.Errorf("read audit log: %w", err)
		}
		consumed += int64(len(line))
		var e auditEvent
		if json.Unmarshal(line, &e) != nil || e.Stage != "ResponseComplete" ||
			!slices.Contains(ourUsers, e.User.Username) {
			continue
		}
		res := "-"
		if e.ObjectRef != nil {
			res = e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				res += "/" + e.ObjectRef.Subresource
			}
		}
		key := k{e.User.Username, e.Verb, res}
		c := tally[key]
		if c == nil {
			c = &requestCount{User: key.user, Verb: key.verb, Resource: key.res}
			tally[key] = c
		}
		c.Count++
		if e.ResponseStatus != nil && e.ResponseStatus.Code >= 400 {
			c.Errors++
		}
	}
	out := make([]requestCount, 0, len(tally))
	for _, c := range tally {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b requestCount) int {
		return strings.Compare(a.User+a.Verb+a.Resource, b.User+b.Verb+b.Resource)
	})
	return out, consumed, nil
}

// auditPolicy is the API server's audit policy of the benchmark: every request of our components
// at Metadata level, nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [lvms-operator, lvms-node-sim, csi-provisioner]
- level: None
`
