package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The scheduler extender of the dev cluster (`lvms-dev up --scheduler-extender`). The real
// kube-scheduler runs on the host, the extender (`lvms scheduler`, the kustomize component
// config/components/scheduler-extender) in a pod on a node. The scheduler calls the extender at
// 127.0.0.1:<portExtender>; the supervisor carries each connection to a ready endpoint of the
// extender's Service over that node's bridge, the way the egress proxy reaches pods (no
// kube-proxy on the host).
const (
	portExtender = "scheduler-extender"
	// ExtenderComponent is the kustomize component the product overlay adds.
	ExtenderComponent = "config/components/scheduler-extender"
	// extenderService is the extender's Service in Namespace.
	extenderService = "lvms-scheduler"
	// extenderResource is the extended resource the pod webhook adds to pods with unbound claims
	// of the driver; the scheduler calls the extender for those pods only (TopoLVM's name).
	extenderResource = "topolvm.io/capacity"
)

// extenderOverlayPatch runs the extender on every node: the dev cluster's control plane is on the
// host, so no node has the control-plane role the component selects. The host's scheduler is a
// scheduler that runs elsewhere (docs/scheduler-extender.md): the extender listens on every
// address of its node, and the dev cluster adds a Service for it (extenderServiceYAML); nothing
// but the host's processes reaches the nodes.
const extenderOverlayPatch = `patches:
- target: {kind: DaemonSet, name: lvms-scheduler}
  patch: |-
    - op: remove
      path: /spec/template/spec/nodeSelector
- target: {kind: ConfigMap, name: lvms-scheduler-options}
  patch: |-
    - op: replace
      path: /data/scheduler-options.yaml
      value: |
        listen: ":9251"
        default-divisor: 1
`

// extenderServiceYAML is the Service the dev cluster's host scheduler reaches the extender by.
const extenderServiceYAML = `apiVersion: v1
kind: Service
metadata:
  name: ` + extenderService + `
  namespace: ` + Namespace + `
spec:
  selector:
    app.kubernetes.io/name: lvms-scheduler
  ports:
  - {name: extender, port: 9251, targetPort: extender}
`

// schedulerConfigYAML is the KubeSchedulerConfiguration of the host's kube-scheduler with the
// extender: TopoLVM's verbs and managed resource, and the weight docs/scheduler-extender.md
// recommends (3: a snapshot's node then wins over the default plugins' usual differences).
// The dev cluster's scheduler does not score nodes by requested CPU and memory
// (NodeResourcesFit, NodeResourcesBalancedAllocation): the operator's pod on one of its two
// single-CPU nodes made every e2e pod whose claim fit both go to the other node (b041dfc, the
// suite alone: every TestVolumeFlows pod on node-1, which fell behind while node-0 idled). Nodes
// equal by capacity then get pods at random, as the extender's capacity score spreads claims.
const schedulerConfigYAML = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %[1]s
leaderElection:
  leaderElect: false
extenders:
- urlPrefix: http://127.0.0.1:%[2]d
  filterVerb: predicate
  prioritizeVerb: prioritize
  weight: 3
  nodeCacheCapable: false
  managedResources:
  - name: %[3]s
    ignoredByScheduler: true
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: NodeResourcesFit
      - name: NodeResourcesBalancedAllocation
`

// schedulerArgs are the kube-scheduler's configuration arguments: the flags without the extender,
// a configuration file with it.
func (c *cluster) schedulerArgs() ([]string, error) {
	if !c.cfg.SchedulerExtender {
		return []string{"--kubeconfig=" + c.l.Kubeconfig(), "--leader-elect=false"}, nil
	}
	path := filepath.Join(c.l.Dir, "kube-scheduler.yaml")
	body := fmt.Sprintf(schedulerConfigYAML, c.l.Kubeconfig(), c.state.Ports[portExtender], extenderResource)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return nil, fmt.Errorf("write kube-scheduler configuration: %w", err)
	}
	return []string{"--config=" + path}, nil
}

// serviceForward carries connections accepted on a host listener to a ready endpoint of a Service.
type serviceForward struct {
	ln     net.Listener
	egress *egressProxy
	cs     kubernetes.Interface
	ns     string
	svc    string
	log    *log.Logger
	wg     sync.WaitGroup
}

// startExtenderForward listens on the extender's port (when the extender is on).
func (c *cluster) startExtenderForward() error {
	if !c.cfg.SchedulerExtender {
		return nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.l.Kubeconfig())
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+c.port(portExtender))
	if err != nil {
		return fmt.Errorf("scheduler extender forward: %w", err)
	}
	logFile, err := os.OpenFile(c.l.Log("extender-forward"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("extender forward log: %w", err)
	}
	f := &serviceForward{ln: ln, egress: c.egress, cs: cs, ns: Namespace, svc: extenderService,
		log: log.New(logFile, "extender-forward: ", log.LstdFlags|log.Lmicroseconds)}
	c.forward = f
	go f.serve()
	return nil
}

// serve accepts until the listener is closed.
func (f *serviceForward) serve() {
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Go(func() { f.carry(conn) })
	}
}

// close stops accepting; open connections end with their bridges.
func (f *serviceForward) close() { _ = f.ln.Close() }

// carry tunnels conn to an endpoint of the Service.
func (f *serviceForward) carry(conn net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := f.dialAndTunnel(ctx, conn); err != nil {
		f.log.Printf("%s/%s: %v", f.ns, f.svc, err)
		_ = conn.Close()
	}
}

// dialAndTunnel dials a ready endpoint through its node's bridge and tunnels conn to it.
func (f *serviceForward) dialAndTunnel(ctx context.Context, conn net.Conn) error {
	target, err := f.endpoint(ctx)
	if err != nil {
		return err
	}
	s, dial, err := f.egress.route(target)
	if err != nil {
		return err
	}
	remote, err := s.Dial(ctx, dial)
	if err != nil {
		return fmt.Errorf("dial %s: %w", target, err)
	}
	tunnel(conn, bufio.NewReader(conn), remote)
	return nil
}

// endpoint returns address:port of a ready endpoint of the Service.
func (f *serviceForward) endpoint(ctx context.Context) (string, error) {
	slices, err := f.cs.DiscoveryV1().EndpointSlices(f.ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + f.svc,
	})
	if err != nil {
		return "", fmt.Errorf("endpoints: %w", err)
	}
	for _, es := range slices.Items {
		if len(es.Ports) == 0 || es.Ports[0].Port == nil {
			continue
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*es.Ports[0].Port))), nil
		}
	}
	return "", fmt.Errorf("service %s/%s has no ready endpoint", f.ns, f.svc)
}
