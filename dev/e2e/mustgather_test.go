//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestMustGather runs `kubectl lvms must-gather` on the cluster: the tarball holds, for every node, the
// host's vgs with the suite's volume groups, its lvs with the thin pool, and lsblk (run in the node
// agent's pod); the LVMCluster; the logs of the operator and the node agents; and no Secret's content
// (the operator's webhook certificate and the transfer CA are Secrets in its namespace; their
// certificates, which are public, are in the webhook configurations).
func TestMustGather(t *testing.T) {
	fullSetOnly(t, "kubectl lvms must-gather's tarball from every node, without secrets")
	e := newEnv(t)
	dest := filepath.Join(t.TempDir(), "must-gather.tar.gz")
	out := kubectl(t, "lvms", "must-gather", "--dest", dest)
	t.Logf("kubectl lvms must-gather:\n%s", out)
	files := readTarGz(t, dest)
	t.Logf("%d files; errors.txt:\n%s", len(files), files["must-gather/errors.txt"])
	for _, node := range e.nodes() {
		dir := "must-gather/nodes/" + node + "/"
		for file, want := range map[string][]string{
			"vgs.json":     {`"vg_name":"thick"`, `"vg_name":"thin"`},
			"lvs.json":     {`"lv_name":"thin-pool-1"`},
			"lsblk.json":   {`"blockdevices"`},
			"commands.txt": {"$ lvs -a", "container node"},
		} {
			body := strings.ReplaceAll(files[dir+file], " ", "")
			for _, w := range want {
				if !strings.Contains(body, strings.ReplaceAll(w, " ", "")) {
					t.Errorf("%s%s lacks %s:\n%.2000s", dir, file, w, files[dir+file])
				}
			}
		}
		if strings.Contains(files["must-gather/errors.txt"], "nodes/"+node+": not collected") {
			t.Errorf("node %s not collected", node)
		}
	}
	if !strings.Contains(files["must-gather/lvms/lvmclusters.yaml"], "name: e2e") {
		t.Errorf("lvms/lvmclusters.yaml lacks the LVMCluster e2e")
	}
	logs := map[string]int{}
	for name, body := range files {
		for _, c := range []string{"/operator.log", "/node.log"} {
			if strings.HasPrefix(name, "must-gather/logs/") && strings.HasSuffix(name, c) && len(body) > 0 {
				logs[c]++
			}
		}
	}
	if logs["/operator.log"] == 0 || logs["/node.log"] < len(e.nodes()) {
		t.Errorf("logs: %v; want the operator's and every node agent's", logs)
	}
	noSecretIn(t, e, files)
}

// noSecretIn fails when a file holds the content of a Secret of the operator's namespace.
func noSecretIn(t *testing.T, e *env, files map[string]string) {
	t.Helper()
	var secrets corev1.SecretList
	if err := e.c.List(e.ctx(), &secrets, client.InNamespace(operatorNS)); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if len(v) < 16 || isCertificates(v) {
				// Too short to tell from other text; or certificates, which are public: the webhook
				// configurations carry the operator's CA as their caBundle.
				continue
			}
			checked++
			for name, body := range files {
				if strings.Contains(body, string(v)) || strings.Contains(body, base64.StdEncoding.EncodeToString(v)) {
					t.Errorf("%s holds key %s of Secret %s", name, k, s.Name)
				}
			}
		}
	}
	if checked == 0 {
		t.Errorf("no Secret in %s to check against", operatorNS)
	}
	t.Logf("checked the content of %d Secret keys", checked)
}

// isCertificates reports whether v is PEM with certificates only (no key).
func isCertificates(v []byte) bool {
	found := false
	for rest := v; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return found && len(bytes.TrimSpace(rest)) == 0
		}
		if b.Type != "CERTIFICATE" {
			return false
		}
		found = true
	}
}

// readTarGz returns the files of a .tar.gz by name.
func readTarGz(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = string(b)
	}
}
