package operator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// certFiles copies the webhook serving certificate that the rotator keeps in a Secret (--webhook-cert-
// mode=self) into a directory of the operator's own, where the webhook server reads it. Waiting for
// the kubelet to project the Secret's volume instead takes up to a minute and more after the
// certificate is issued (the kubelet refreshes volumes on its pod sync), and the webhook, and so the
// install, is not ready until then. Only the serving pair is written; the CA key stays in the Secret.
type certFiles struct {
	reader client.Reader
	secret types.NamespacedName
	dir    string
	// poll is the interval while no certificate exists yet, then every refresh.
	poll, refresh time.Duration
	// names are the Secret keys copied (default certFileNames).
	names []string
	// what names the certificate in logs (default "webhook").
	what string
}

// certFileNames are the Secret keys copied, as files of the same names.
var certFileNames = []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}

// NeedLeaderElection is false: every replica serves the webhook.
func (certFiles) NeedLeaderElection() bool { return false }

// Start copies the certificate until ctx ends: every poll until there is one, then every refresh
// (the rotator renews it long before it expires). A failed copy is logged and retried.
func (c certFiles) Start(ctx context.Context) error {
	what := c.what
	if what == "" {
		what = "webhook"
	}
	log := ctrl.LoggerFrom(ctx).WithName(what + "-cert-files")
	for {
		wait := c.poll
		written, err := c.sync(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error(err, "Copying the "+what+" certificate failed", "secret", c.secret, "dir", c.dir)
		case written:
			wait = c.refresh
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// sync writes the Secret's certificate files that differ from what dir holds; it reports whether
// the Secret has a certificate (written now or before).
func (c certFiles) sync(ctx context.Context) (bool, error) {
	var s corev1.Secret
	if err := c.reader.Get(ctx, c.secret, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get Secret %s: %w", c.secret, err)
	}
	names := c.names
	if len(names) == 0 {
		names = certFileNames
	}
	for _, name := range names {
		if len(s.Data[name]) == 0 {
			return false, nil // not issued yet
		}
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return false, fmt.Errorf("create %s: %w", c.dir, err)
	}
	// The key first: the server reloads when the certificate changes and then reads both.
	for _, name := range []string{corev1.TLSPrivateKeyKey, corev1.TLSCertKey} {
		if !slices.Contains(names, name) {
			continue
		}
		if err := writeIfChanged(filepath.Join(c.dir, name), s.Data[name]); err != nil {
			return false, err
		}
	}
	return true, nil
}

// writeIfChanged replaces path with data (write to a temporary file, then rename) unless it holds
// data already.
func writeIfChanged(path string, data []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
