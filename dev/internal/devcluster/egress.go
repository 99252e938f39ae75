package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"
)

// The real nodes' addresses. Node i (0-based) has nodeIP(i) on its loopback interface (the
// kubelet's --node-ip: a kubelet refuses a loopback node address) and the pod network
// podCIDR(i). Neither exists outside its guest: the apiserver reaches them through the egress
// proxy, which carries each connection over that node's bridge.
var (
	nodeNet = netip.MustParsePrefix("10.100.0.0/24")
	podNet  = netip.MustParsePrefix("10.244.0.0/16")
)

func nodeIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 100, 0, byte(i + 1)}) }

func podCIDR(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i + 1), 0}), 24)
}

// podNode is the node whose pod network podCIDR holds ip, an address in podNet.
func podNode(ip netip.Addr) int { return int(ip.As4()[2]) - 1 }

// egressConfig is the apiserver's EgressSelectorConfiguration: everything it sends to the
// cluster (kubelets for logs, exec and port-forward; webhook and aggregated API endpoints) goes
// through an HTTP CONNECT proxy on a unix socket.
const egressConfig = `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`

// nodeBridge is what the host needs of a node's bridge: streams to addresses inside the node
// (*bridge.HostSession; fakes in tests).
type nodeBridge interface {
	Dial(ctx context.Context, target string) (net.Conn, error)
}

// egressProxy is the host's way into the real nodes: an HTTP CONNECT proxy on a unix socket
// for the apiserver's "cluster" egress. CONNECT nodeIP(i):port is carried to port on node i's
// loopback, CONNECT <pod IP in podCIDR(i)>:port to that pod address inside node i; everything
// else is refused. Nothing is ever dialed on the host.
type egressProxy struct {
	mu       sync.Mutex
	sessions map[int]nodeBridge
	ln       net.Listener
	srv      *http.Server
	done     chan struct{}
}

// startEgressProxy listens on the unix socket path.
func startEgressProxy(path string, logTo io.Writer) (*egressProxy, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &egressProxy{sessions: map[int]nodeBridge{}, ln: ln, done: make(chan struct{})}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(logTo, "egress-proxy: ", log.LstdFlags|log.Lmicroseconds)}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// register makes node i reachable through s.
func (p *egressProxy) register(i int, s nodeBridge) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sessions[i] = s
}

// close stops accepting and closes the socket; hijacked tunnels end with their bridges.
func (p *egressProxy) close() {
	_ = p.srv.Close()
	<-p.done
}

// route maps a CONNECT target to a node and the address to dial inside it.
func (p *egressProxy) route(target string) (nodeBridge, string, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil, "", fmt.Errorf("target %q: %w", target, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil, "", fmt.Errorf("target %q is not an IP address", target)
	}
	var node int
	var dial string
	switch {
	case nodeNet.Contains(ip):
		node, dial = int(ip.As4()[3])-1, net.JoinHostPort("127.0.0.1", port)
	case podNet.Contains(ip):
		node, dial = podNode(ip), target
	default:
		return nil, "", fmt.Errorf("target %s is neither a node nor a pod address", target)
	}
	s := p.session(node)
	if s == nil {
		return nil, "", fmt.Errorf("target %s: no bridge to node %d", target, node)
	}
	return s, dial, nil
}

// session is node i's bridge, nil until it is registered.
func (p *egressProxy) session(i int) nodeBridge {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[i]
}

// ServeHTTP answers CONNECT requests by tunnelling them over the node's bridge.
func (p *egressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
		return
	}
	s, dial, err := p.route(r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	remote, err := s.Dial(ctx, dial)
	cancel()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = remote.Close()
		http.Error(w, "cannot hijack", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		_ = remote.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = client.Close()
		_ = remote.Close()
		return
	}
	tunnel(client, buf.Reader, remote)
}

// tunnel copies both ways until both directions are done, passing half-closes on.
func tunnel(client net.Conn, pending *bufio.Reader, remote net.Conn) {
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(remote, pending) // the buffered reader drains into the client conn
		_ = remote.Close()              // a bridge stream's Close ends our sending half
	})
	wg.Go(func() {
		_, _ = io.Copy(client, remote)
		if cw, ok := client.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = client.Close()
		}
	})
	wg.Wait()
	_ = client.Close()
}
