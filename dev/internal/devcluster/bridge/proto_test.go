package bridge

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		anyPort bool
		want    string // canonical form, "" for an error
	}{
		{"127.0.0.1:6443", false, "127.0.0.1:6443"},
		{"127.1.2.3:80", false, "127.1.2.3:80"},
		{"[::1]:9808", false, "[::1]:9808"},
		{"[::ffff:127.0.0.1]:80", false, "127.0.0.1:80"},
		{"127.0.0.1:0", true, "127.0.0.1:0"},
		{"127.0.0.1:0", false, ""},
		{"127.0.0.1:http", false, ""},
		{"127.0.0.1:65536", false, ""},
		{"localhost:80", false, ""},
		{"0.0.0.0:80", true, ""},
		{":80", true, ""},
		{"[fe80::1%lo]:80", false, ""},
		{"10.0.0.1:80", false, ""},
		{"127.0.0.1", false, ""},
	} {
		got, err := parseLoopback(tc.addr, tc.anyPort)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("parseLoopback(%q, %v) = %q, %v; want %q", tc.addr, tc.anyPort, got, err, tc.want)
		}
	}
}

// byteReader hands out one byte per Read, like a slow serial line, and records how much was read.
type byteReader struct {
	data string
	read int
}

func (r *byteReader) Read(p []byte) (int, error) {
	if r.read == len(r.data) {
		return 0, io.EOF
	}
	p[0] = r.data[r.read]
	r.read++
	return 1, nil
}

func TestAwaitToken(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		limit int
		want  string // error substring, "" for success
	}{
		{"token alone", guestHello, 0, ""},
		{"after noise", "\r\n\x00garbage\r\nLVMS-BRIDGE/1 GUE" + guestHello, 100, ""},
		{"partial token repeated", strings.Repeat("\nLVMS-BR", 3) + guestHello, 100, ""},
		{"noise over the limit", strings.Repeat("x", 11) + guestHello, 10, "not seen in the first 10 bytes"},
		{"line ends first", "\nLVMS-BRIDGE/1", 100, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &byteReader{data: tc.input + "after"}
			err := awaitToken(r, guestHello, tc.limit)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if rest := tc.input[r.read:] + "after"; rest != "after" {
					t.Errorf("read past the token: left %q", rest)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestHeaderAndReply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		want  string // readReply error substring, "" for nil
	}{
		{"ok", nil, ""},
		{"refusal", errors.New("dial 127.0.0.1:1: connection refused"), "connection refused"},
		{"multi-line refusal", errors.New("a\nb"), "a b"},
		{"long refusal", errors.New(strings.Repeat("x", 2*maxHeader)), "xxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeHeader(&b, "127.0.0.1:6443"); err != nil {
				t.Fatal(err)
			}
			if err := writeReply(&b, tc.cause); err != nil {
				t.Fatal(err)
			}
			r := &byteReader{data: b.String()}
			if h, err := readLine(r); err != nil || h != "127.0.0.1:6443" {
				t.Fatalf("header %q, %v", h, err)
			}
			err := readReply(r)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if e := wantErr(err, ErrRefused, tc.want); e != nil {
				t.Error(e)
			}
		})
	}
	if err := writeHeader(io.Discard, "a\nb"); err == nil {
		t.Error("header with a newline accepted")
	}
	if _, err := readLine(&byteReader{data: strings.Repeat("x", maxHeader+10) + "\n"}); err == nil {
		t.Error("overlong header accepted")
	}
}

func TestHandshake(t *testing.T) {
	t.Run("host skips noise before the guest hello", func(t *testing.T) {
		hostEnd, guestEnd := linePair(t, "socketpair")
		go func() { _, _ = io.WriteString(guestEnd, "\r\n[  1.23] junk on the line\r\n") }()
		gch := make(chan error, 1)
		go func() {
			time.Sleep(50 * time.Millisecond)
			s, err := GuestConn(context.Background(), guestEnd, Options{})
			if err == nil {
				err = s.Close()
			}
			gch <- err
		}()
		h, err := Host(context.Background(), hostEnd, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-gch; err != nil {
			t.Fatal(err)
		}
		_ = h.Close()
	})
	t.Run("host gives up with its context and closes the line", func(t *testing.T) {
		hostEnd, guestEnd := linePair(t, "socketpair")
		defer guestEnd.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := Host(ctx, hostEnd, Options{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Host = %v, want a deadline error", err)
		}
		_ = guestEnd.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := guestEnd.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("guest end read %v, want EOF (line closed)", err)
		}
	})
	t.Run("guest rejects a wrong answer", func(t *testing.T) {
		hostEnd, guestEnd := linePair(t, "pipe")
		go func() {
			_ = awaitToken(hostEnd, guestHello, 0)
			_, _ = io.WriteString(hostEnd, "SSH-2.0-something\n")
			_ = hostEnd.Close()
		}()
		_, err := GuestConn(context.Background(), guestEnd, Options{})
		if err == nil || !strings.Contains(err.Error(), "LVMS-BRIDGE/1 HOST") {
			t.Errorf("GuestConn = %v, want a handshake error", err)
		}
	})
}
