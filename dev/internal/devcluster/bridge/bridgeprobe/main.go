// Command bridgeprobe measures HTTP over a host-guest bridge (package bridge); the bridge's UML
// test runs it on both sides, as guests have neither curl nor wget of their own guarantee.
//
//	bridgeprobe serve -listen 127.0.0.1:0   # prints "listening on ADDR", serves until GET /quit
//	bridgeprobe get -url http://ADDR -n 20 -size 33554432 -wait 60s
//
// serve answers /hello, /blob?size=N (N bytes), /sink (reads the body, answers its length) and
// /quit (answers, then exits 0). get retries /hello until it answers (at most -wait), times -n
// requests on fresh connections, downloads and uploads -size bytes, and prints one line:
//
//	PROBE first=… conn_median=… conn_max=… down_MBps=… up_MBps=…
//
// first is measured from the start of get. Build it with CGO_ENABLED=0 so it runs in any guest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bridgeprobe serve|get [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "get":
		err = get(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridgeprobe:", err)
		os.Exit(1)
	}
}

// pattern is what /blob sends, repeated.
var pattern = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	limit := fs.Duration("timeout", 10*time.Minute, "exit with an error after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "listening on %s\n", ln.Addr())
	quit := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello\n") })
	mux.HandleFunc("/blob", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		for n > 0 {
			k := min(n, int64(len(pattern)))
			if _, err := w.Write(pattern[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	mux.HandleFunc("/sink", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = fmt.Fprintf(w, "%d\n", n)
	})
	mux.HandleFunc("/quit", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "bye\n")
		close(quit)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	select {
	case <-quit:
		time.Sleep(100 * time.Millisecond) // let the answer to /quit leave
		_ = srv.Close()
		return nil
	case <-time.After(*limit):
		_ = srv.Close()
		return errors.New("no /quit before the timeout")
	}
}

// fetch sends one request on a fresh connection and returns the body's length.
func fetch(ctx context.Context, method, url string, body io.Reader) (int64, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return n, err
}

// patternReader yields size bytes of pattern.
type patternReader struct{ left int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), r.left)], pattern)
	r.left -= int64(n)
	return n, nil
}

func get(args []string) error {
	start := time.Now()
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	base := fs.String("url", "", "base URL of a bridgeprobe serve")
	n := fs.Int("n", 20, "requests on fresh connections to time")
	size := fs.Int64("size", 32<<20, "bytes to download and upload")
	wait := fs.Duration("wait", time.Minute, "how long to retry the first request")
	limit := fs.Duration("timeout", 5*time.Minute, "time limit for everything after the first answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait+*limit)
	defer cancel()
	var err error
	for {
		if _, err = fetch(ctx, http.MethodGet, *base+"/hello", nil); err == nil {
			break
		}
		if time.Since(start) > *wait {
			return fmt.Errorf("no answer within %s: %w", *wait, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	first := time.Since(start)
	lat := make([]time.Duration, 0, *n)
	for range *n {
		t0 := time.Now()
		if _, err := fetch(ctx, http.MethodGet, *base+"/hello", nil); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	t0 := time.Now()
	if got, err := fetch(
		ctx,
		http.MethodGet,
		*base+"/blob?size="+strconv.FormatInt(*size, 10),
		nil,
	); err != nil ||
		got != *size {
		return fmt.Errorf("download: %d of %d bytes: %w", got, *size, err)
	}
	down := time.Since(t0)
	t0 = time.Now()
	if _, err := fetch(ctx, http.MethodPost, *base+"/sink", &patternReader{left: *size}); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	up := time.Since(t0)
	mbps := func(d time.Duration) float64 { return float64(*size) / 1e6 / d.Seconds() }
	fmt.Fprintf(os.Stdout, "PROBE first=%s conn_median=%s conn_max=%s down_MBps=%.1f up_MBps=%.1f\n",
		first.Round(time.Millisecond), median(lat).Round(100*time.Microsecond),
		slices.Max(lat).Round(100*time.Microsecond), mbps(down), mbps(up))
	return nil
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)/2]
}
