// Package tlsprofile is the TLS policy of the product's HTTPS endpoints that clients outside the
// product reach (the operator's webhook and metrics, the node agents' metrics): the lowest protocol
// version they accept and the cipher suites they offer below TLS 1.3, as the flags
// --tls-min-version and --tls-cipher-suites give them, named as kube-apiserver's flags of the same
// names name them. The operator passes its own values on to the node agents. Without the flags
// Go's defaults hold (TLS 1.2 and up, Go's secure suites). The channels only the product's parts
// use (node-to-node transfers, the snapshot metadata proxy) are TLS 1.3 only, whatever the flags.
package tlsprofile

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Flag names.
const (
	MinVersionFlag   = "tls-min-version"
	CipherSuitesFlag = "tls-cipher-suites"
)

// versions are the accepted values of --tls-min-version.
var versions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10,
	"VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12,
	"VersionTLS13": tls.VersionTLS13,
}

// Flags are the flag values as given.
type Flags struct {
	MinVersion   string
	CipherSuites []string
}

// AddFlags binds f to the two flags of fl.
func (f *Flags) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.MinVersion, MinVersionFlag, "",
		"lowest TLS version the HTTPS endpoints accept: VersionTLS12 or VersionTLS13 (VersionTLS10 and "+
			"VersionTLS11 too, not recommended); default Go's, TLS 1.2")
	fl.StringSliceVar(&f.CipherSuites, CipherSuitesFlag, nil,
		"cipher suites of the HTTPS endpoints below TLS 1.3, comma-separated IANA names (as Go's crypto/tls "+
			"names them, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); TLS 1.3's are fixed; default Go's")
}

// Profile is the parsed policy; its zero value keeps Go's defaults.
type Profile struct {
	MinVersion   uint16
	CipherSuites []uint16
	flags        Flags
}

// Parse checks the flag values: a known version, and cipher suites Go knows.
func (f Flags) Parse() (Profile, error) {
	p := Profile{flags: f}
	if f.MinVersion != "" {
		v, ok := versions[f.MinVersion]
		if !ok {
			names := make([]string, 0, len(versions))
			for n := range versions {
				names = append(names, n)
			}
			slices.Sort(names)
			return Profile{}, fmt.Errorf("--%s %q: use one of %s", MinVersionFlag, f.MinVersion,
				strings.Join(names, ", "))
		}
		p.MinVersion = v
	}
	known := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[s.Name] = s.ID
	}
	for _, name := range f.CipherSuites {
		id, ok := known[strings.TrimSpace(name)]
		if !ok {
			return Profile{}, fmt.Errorf("--%s: unknown cipher suite %q (Go's crypto/tls names, e.g. %s)",
				CipherSuitesFlag, name, tls.CipherSuiteName(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256))
		}
		p.CipherSuites = append(p.CipherSuites, id)
	}
	return p, nil
}

// Apply sets the policy on c (for controller-runtime's TLSOpts).
func (p Profile) Apply(c *tls.Config) {
	if p.MinVersion != 0 {
		c.MinVersion = p.MinVersion
	}
	if len(p.CipherSuites) > 0 {
		c.CipherSuites = slices.Clone(p.CipherSuites)
	}
}

// Args are the flags that give another component the same policy (none for Go's defaults).
func (p Profile) Args() []string {
	var args []string
	if p.flags.MinVersion != "" {
		args = append(args, "--"+MinVersionFlag+"="+p.flags.MinVersion)
	}
	if len(p.flags.CipherSuites) > 0 {
		args = append(args, "--"+CipherSuitesFlag+"="+strings.Join(p.flags.CipherSuites, ","))
	}
	return args
}
