package transfersigner_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// startIdentity runs the transfer identity of node as the node agent's service account on that
// node (its requests carry the node-name extra, as from the agent Pod's token), with the node
// agent's role only, and waits until it has its certificate.
func startIdentity(ctx context.Context, t *testing.T, node string) *transfer.Identity {
	t.Helper()
	c, err := client.New(as(restCfg, nodeAgent, map[string][]string{transfer.NodeNameExtra: {node}}),
		client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	id, err := transfer.NewIdentity(transfer.IdentityOptions{Client: c, Node: node, Namespace: operatorNamespace,
		Lifetime: time.Hour, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = id.Start(ctx) }()
	select {
	case <-id.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s's agent got no transfer certificate", node)
	}
	return id
}

// TestIdentitiesCopyBetweenNodes: two node agents obtain their certificates through the signer with
// the node agent's RBAC, and node-b's agent fetches a volume from node-a's over mutual TLS with a
// token signed by the authority; the key the agents verify tokens with is the trust ConfigMap's.
func TestIdentitiesCopyBetweenNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	nodeA, nodeB := startIdentity(ctx, t, "node-a"), startIdentity(ctx, t, "node-b")

	var sec corev1.Secret
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: transfer.AuthoritySecret},
		&sec); err != nil {
		t.Fatal(err)
	}
	authority, err := transfer.AuthorityFromSecretData(sec.Data)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	open := func(_ context.Context, v transfer.Volume) (transfer.Source, error) {
		return transfer.Source{Ranges: transfer.Whole(uint64(len(data))), Size: uint64(len(data)),
			Dev: bytes.NewReader(data), Release: func() error { return nil }}, nil
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(nodeA.ServerTLS())))
	transferpb.RegisterTransferServer(
		srv,
		transfer.NewServer("node-a", transfer.NewVerifierOf(nodeA.TokenKey, nil), open),
	)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	cfg, err := nodeB.ClientTLS("node-a")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	token, err := transfer.Issue(authority.TokenKey(), transfer.Claims{
		Source: transfer.Volume{Node: "node-a", LV: "snap"}, Target: transfer.Volume{Node: "node-b", LV: "pvc"},
		Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.Create(filepath.Join(t.TempDir(), "dst"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dst.Close() }()
	p, err := transfer.Fetch(
		ctx,
		transferpb.NewTransferClient(conn),
		token,
		transfer.Progress{},
		dst,
		transfer.Options{},
	)
	if err != nil || !p.Complete || p.Bytes != uint64(len(data)) {
		t.Fatalf("fetch: %+v, %v", p, err)
	}
	got, err := os.ReadFile(dst.Name())
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy differs from the source (%v)", err)
	}

	// node-b's agent reaching node-a's service while expecting another node's certificate fails the
	// handshake: the server is known by its certificate's node name.
	wrong, err := nodeB.ClientTLS("node-c")
	if err != nil {
		t.Fatal(err)
	}
	conn2, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(wrong)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn2.Close() }()
	token2, _ := transfer.Issue(authority.TokenKey(), transfer.Claims{
		Source: transfer.Volume{Node: "node-a", LV: "snap"}, Target: transfer.Volume{Node: "node-b", LV: "pvc"},
		Expires: time.Now().Add(time.Minute)})
	if _, err := transfer.Fetch(ctx, transferpb.NewTransferClient(conn2), token2, transfer.Progress{}, dst,
		transfer.Options{}); err == nil {
		t.Error("a server whose certificate names node-a served a client that expected node-c")
	}
}
