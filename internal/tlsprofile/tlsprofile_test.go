package tlsprofile

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) (Profile, error) {
	t.Helper()
	var f Flags
	fl := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.AddFlags(fl)
	if err := fl.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Parse()
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		min     uint16
		suites  []uint16
		wantErr string
	}{
		{args: nil},
		{args: []string{"--tls-min-version=VersionTLS13"}, min: tls.VersionTLS13},
		{args: []string{"--tls-min-version=VersionTLS12",
			"--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
			min: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
				tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}},
		{args: []string{"--tls-min-version=1.3"}, wantErr: "use one of VersionTLS10, VersionTLS11"},
		{args: []string{"--tls-cipher-suites=TLS_NOT_A_SUITE"}, wantErr: `unknown cipher suite "TLS_NOT_A_SUITE"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			p, err := parse(t, tc.args...)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one with %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case p.MinVersion != tc.min || !slices.Equal(p.CipherSuites, tc.suites):
				t.Errorf("parsed %d %v, want %d %v", p.MinVersion, p.CipherSuites, tc.min, tc.suites)
			}
		})
	}
}

// TestArgsGiveTheSamePolicy: what Args passes on parses to the same profile.
func TestArgsGiveTheSamePolicy(t *testing.T) {
	p, err := parse(t, "--tls-min-version=VersionTLS12", "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
	if err != nil {
		t.Fatal(err)
	}
	q, err := parse(t, p.Args()...)
	if err != nil {
		t.Fatal(err)
	}
	if q.MinVersion != p.MinVersion || !slices.Equal(q.CipherSuites, p.CipherSuites) {
		t.Errorf("Args %v give %+v, want %+v", p.Args(), q, p)
	}
	if none, _ := parse(t); len(none.Args()) != 0 {
		t.Errorf("Args without flags = %v, want none", none.Args())
	}
}

// TestHandshake: a server with the policy applied refuses a client below its minimum version and a
// TLS 1.2 client that offers none of its suites, and serves one that matches.
func TestHandshake(t *testing.T) {
	p, err := parse(t, "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
	if err != nil {
		t.Fatal(err)
	}
	p13, err := parse(t, "--tls-min-version=VersionTLS13")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		server  Profile
		client  *tls.Config
		refusal string // the alert of a refusal; "" when served
	}{
		{"TLS 1.2 client, TLS 1.3 minimum", p13, &tls.Config{MaxVersion: tls.VersionTLS12},
			"tls: protocol version not supported"},
		{"TLS 1.3 client, TLS 1.3 minimum", p13, &tls.Config{}, ""},
		{"TLS 1.2 client, another suite", p, &tls.Config{MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}, "tls: handshake failure"},
		{"TLS 1.2 client, the suite", p, &tls.Config{MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refusals are expected
			srv.TLS = &tls.Config{}
			tc.server.Apply(srv.TLS)
			srv.StartTLS()
			defer srv.Close()
			client := srv.Client()
			tr, ok := client.Transport.(*http.Transport)
			if !ok {
				t.Fatal("not an http.Transport")
			}
			tc.client.RootCAs = tr.TLSClientConfig.RootCAs
			tr.TLSClientConfig = tc.client
			resp, err := client.Get(srv.URL)
			if err == nil {
				_ = resp.Body.Close()
			}
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && err == nil:
				t.Error("served")
			case tc.refusal != "" && !strings.Contains(err.Error(), "remote error: "+tc.refusal):
				t.Errorf("refused with %v, want the server's alert %q", err, tc.refusal)
			}
		})
	}
}
