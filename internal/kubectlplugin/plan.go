package kubectlplugin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// PlanFieldManager is the field manager of the LVMCluster that plan creates.
const PlanFieldManager = "kubectl-lvms"

// PlanSpecAnnotation holds the SHA-256 of the spec of the file plan created its LVMCluster from
// (before the API server filled in defaults), so that plan run again with the same file recognises
// its own dry-run LVMCluster.
const PlanSpecAnnotation = "lvm.topolvm.io/plan-spec-sha256"

// Defaults of PlanOptions.
const (
	DefaultPlanTimeout      = 5 * time.Minute
	DefaultPlanPollInterval = 2 * time.Second
)

// ErrLVMClusterExists is wrapped by plan's refusal when an LVMCluster other than its own plan exists.
var ErrLVMClusterExists = errors.New("an LVMCluster already exists")

// PlanOptions are the options of kubectl lvms plan.
type PlanOptions struct {
	Options
	// File is the LVMCluster manifest (YAML or JSON); "-" reads Stdin.
	File  string
	Stdin io.Reader
	// Timeout bounds the wait for every node's plan (DefaultPlanTimeout when zero).
	Timeout time.Duration
	// PollInterval is how often the LVMCluster is read while waiting (DefaultPlanPollInterval when zero).
	PollInterval time.Duration
}

// RunPlan is kubectl lvms plan -f FILE: it creates the file's LVMCluster with the dry-run annotation
// (unless that very plan exists already), waits until every selected node reported what it would do,
// and writes the plan. It is the only command that writes, and it never touches a disk: in dry-run
// the node agents only plan. On timeout it writes what is known and returns an error naming what it
// still waits for.
func RunPlan(ctx context.Context, c client.Client, opts PlanOptions, out io.Writer) error {
	if err := validateOutput(opts.Output); err != nil {
		return err
	}
	want, err := readPlanFile(opts)
	if err != nil {
		return err
	}
	if want.Namespace == "" {
		want.Namespace = opts.OperatorNamespace
	}
	if err := ensurePlanCluster(ctx, c, want); err != nil {
		return err
	}
	report, waitErr := waitForPlan(ctx, c, want, opts)
	if report == nil {
		return waitErr
	}
	if err := writeReport(out, opts.Output, report, report.writeTable); err != nil {
		return errors.Join(waitErr, err)
	}
	return waitErr
}

// readPlanFile reads the one LVMCluster of opts.File and keeps what a user writes: name, namespace,
// labels, annotations and spec (a `kubectl get -o yaml` copy carries server fields that cannot be
// created).
func readPlanFile(opts PlanOptions) (*lvmv1alpha1.LVMCluster, error) {
	name := opts.File
	var data []byte
	var err error
	switch name {
	case "":
		return nil, errors.New("plan needs the LVMCluster to preview: -f FILE (or -f - for stdin)")
	case "-":
		name = "stdin"
		if opts.Stdin == nil {
			return nil, errors.New("-f - reads stdin, but there is none")
		}
		data, err = io.ReadAll(opts.Stdin)
	default:
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	lc, err := decodeLVMCluster(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name: lc.Name, Namespace: lc.Namespace, Labels: lc.Labels, Annotations: lc.Annotations,
		},
		Spec: lc.Spec,
	}, nil
}

// decodeLVMCluster decodes a YAML or JSON document holding one LVMCluster, refusing unknown fields.
func decodeLVMCluster(data []byte) (*lvmv1alpha1.LVMCluster, error) {
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("split YAML documents: %w", err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("parse YAML or JSON: %w", err)
		}
		if s := strings.TrimSpace(string(j)); s != "null" && s != "" {
			docs = append(docs, j)
		}
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("holds %d objects: plan takes one LVMCluster", len(docs))
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(docs[0], &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if tm.APIVersion != lvmv1alpha1.GroupVersion.String() || tm.Kind != "LVMCluster" {
		return nil, fmt.Errorf(
			"holds kind %q of apiVersion %q: plan takes one LVMCluster (apiVersion %s, kind LVMCluster)",
			tm.Kind,
			tm.APIVersion,
			lvmv1alpha1.GroupVersion,
		)
	}
	dec := json.NewDecoder(bytes.NewReader(docs[0]))
	dec.DisallowUnknownFields()
	lc := &lvmv1alpha1.LVMCluster{}
	if err := dec.Decode(lc); err != nil {
		return nil, fmt.Errorf("decode LVMCluster: %w", err)
	}
	if lc.Name == "" {
		return nil, errors.New("the LVMCluster has no metadata.name")
	}
	return lc, nil
}

// ensurePlanCluster creates want in dry-run unless its plan exists already; it refuses, changing
// nothing, when another LVMCluster exists.
func ensurePlanCluster(ctx context.Context, c client.Client, want *lvmv1alpha1.LVMCluster) error {
	var list lvmv1alpha1.LVMClusterList
	if err := c.List(ctx, &list, client.InNamespace(want.Namespace)); err != nil {
		return fmt.Errorf("list LVMClusters in %s: %w", want.Namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b lvmv1alpha1.LVMCluster) int { return strings.Compare(a.Name, b.Name) })
	for i := range list.Items {
		if err := checkExisting(&list.Items[i], want); err != nil {
			return err
		}
	}
	if len(list.Items) > 0 {
		return nil // checkExisting accepted it: it is this very plan
	}
	digest, err := specDigest(want.Spec)
	if err != nil {
		return err
	}
	create := want.DeepCopy()
	if create.Annotations == nil {
		create.Annotations = map[string]string{}
	}
	create.Annotations[lvmv1alpha1.DryRunAnnotation] = "true"
	create.Annotations[PlanSpecAnnotation] = digest
	if err := c.Create(ctx, create, client.FieldOwner(PlanFieldManager)); err != nil {
		return fmt.Errorf("create LVMCluster %s/%s in dry-run: %w", want.Namespace, want.Name, err)
	}
	return nil
}

// checkExisting returns nil when existing is the dry-run plan of want's spec, else why plan refuses.
func checkExisting(existing, want *lvmv1alpha1.LVMCluster) error {
	ref := existing.Namespace + "/" + existing.Name
	del := fmt.Sprintf("kubectl delete lvmcluster %s -n %s", existing.Name, existing.Namespace)
	dryRun := existing.Annotations[lvmv1alpha1.DryRunAnnotation] == "true"
	switch {
	case !dryRun:
		return fmt.Errorf("refusing to plan: %w: %s is applied (not a dry-run); plan previews an LVMCluster "+
			"before it is applied, and there can be only one (kubectl lvms status shows what it does)",
			ErrLVMClusterExists, ref)
	case !existing.DeletionTimestamp.IsZero():
		return fmt.Errorf("refusing to plan: %w: the dry-run %s is being deleted: run plan again once it is gone",
			ErrLVMClusterExists, ref)
	case existing.Name != want.Name:
		return fmt.Errorf("refusing to plan: %w: %s is the dry-run plan of another LVMCluster: delete it first "+
			"(%s; safe: a dry-run LVMCluster changed nothing on disk) and run plan again",
			ErrLVMClusterExists, ref, del)
	}
	same, err := samePlan(existing, want)
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("refusing to plan: %w: %s is a dry-run plan of a different spec: delete it first "+
			"(%s; safe: a dry-run LVMCluster changed nothing on disk) and run plan again",
			ErrLVMClusterExists, ref, del)
	}
	return nil
}

// samePlan reports whether existing was created from want's spec. The API server fills in defaults
// (fstype, storageClassOptions, ...), so a spec equal to the file's is one proof; the digest plan
// recorded at creation is the other, as long as nobody changed the spec since (generation 1).
func samePlan(existing, want *lvmv1alpha1.LVMCluster) (bool, error) {
	if equality.Semantic.DeepEqual(existing.Spec, want.Spec) {
		return true, nil
	}
	digest, err := specDigest(want.Spec)
	if err != nil {
		return false, err
	}
	return existing.Generation <= 1 && existing.Annotations[PlanSpecAnnotation] == digest, nil
}

// specDigest is the SHA-256 of the spec's JSON (encoding/json writes struct fields in a fixed order).
func specDigest(spec lvmv1alpha1.LVMClusterSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("encode the LVMCluster spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// waitForPlan polls the LVMCluster until its status holds every node's plan. It returns the last
// report it could build (nil when it never read the LVMCluster) and, when incomplete, an error
// naming what it still waits for.
func waitForPlan(
	ctx context.Context,
	c client.Reader,
	want *lvmv1alpha1.LVMCluster,
	opts PlanOptions,
) (*PlanReport, error) {
	timeout := orDefault(opts.Timeout, DefaultPlanTimeout)
	key := client.ObjectKeyFromObject(want)
	var report *PlanReport
	var readErr error
	poll := func(ctx context.Context) (bool, error) {
		var lc lvmv1alpha1.LVMCluster
		if err := c.Get(ctx, key, &lc); err != nil {
			readErr = fmt.Errorf("get LVMCluster %s: %w", key, err)
			if apierrors.IsNotFound(err) {
				readErr = fmt.Errorf("LVMCluster %s was deleted while waiting for its plan: %w", key, err)
			}
			return false, readErr
		}
		report = buildPlanReport(&lc)
		return len(report.Waiting) == 0, nil
	}
	err := wait.PollUntilContextTimeout(ctx, orDefault(opts.PollInterval, DefaultPlanPollInterval), timeout, true, poll)
	switch {
	case err == nil:
		return report, nil
	case readErr != nil:
		return report, readErr
	case report == nil || len(report.Waiting) == 0:
		return report, fmt.Errorf("wait for the plan of LVMCluster %s: %w", key, err)
	default:
		return report, fmt.Errorf("the plan of LVMCluster %s is not complete (--timeout %s): still waiting for %s: %w",
			key, timeout, strings.Join(report.Waiting, "; "), err)
	}
}

// orDefault returns d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
