package kubectlplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/placement"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

// TestCommandsGolden runs every command on the fixture cluster and compares its output with
// testdata/<name>.golden (go test -update rewrites them; review the diff).
func TestCommandsGolden(t *testing.T) {
	cases := []struct {
		name   string
		run    Runner
		args   []string
		output string
	}{
		{name: "status", run: RunStatus},
		{name: "status.json", run: RunStatus, output: OutputJSON},
		{name: "disks", run: RunDisks},
		{name: "disks-node-1", run: RunDisks, args: []string{"node-1"}},
		{name: "volumes", run: RunVolumes},
		{name: "volumes.yaml", run: RunVolumes, output: OutputYAML},
		{name: "why-bound", run: RunWhy, args: []string{"data-db-0"}},
		{name: "why-too-big", run: RunWhy, args: []string{"big-data"}},
		{name: "why-missing-storageclass", run: RunWhy, args: []string{"orphan"}},
		{name: "why-default-class", run: RunWhy, args: []string{"scratch"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newFixtureClient(t, nil)
			opts := Options{OperatorNamespace: testOperatorNamespace, Namespace: "default", Output: tc.output}
			var out bytes.Buffer
			if err := tc.run(context.Background(), c, opts, tc.args, &out); err != nil {
				t.Fatalf("run: %v", err)
			}
			compareTestGolden(t, tc.name, out.String())
		})
	}
}

// TestJSONRoundTrip checks that -o json carries the whole report: decoding it gives the same data.
func TestJSONRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := newFixtureClient(t, nil)
	gather := map[string]struct {
		run    Runner
		args   []string
		report func() (any, error)
		empty  func() any
	}{
		"status": {RunStatus, nil, func() (any, error) { return Status(ctx, c, testOperatorNamespace) },
			func() any { return &StatusReport{} }},
		"disks": {RunDisks, nil, func() (any, error) { return Disks(ctx, c, testOperatorNamespace, "") },
			func() any { return &DisksReport{} }},
		"volumes": {RunVolumes, nil, func() (any, error) { return Volumes(ctx, c) },
			func() any { return &VolumesReport{} }},
		"why": {RunWhy, []string{"big-data"}, func() (any, error) {
			return placement.Why(
				ctx,
				c,
				testOperatorNamespace,
				client.ObjectKey{Namespace: "default", Name: "big-data"},
			)
		}, func() any { return &WhyReport{} }},
		"why without events": {RunWhy, []string{"scratch"}, func() (any, error) {
			return placement.Why(ctx, c, testOperatorNamespace, client.ObjectKey{Namespace: "default", Name: "scratch"})
		}, func() any { return &WhyReport{} }},
		"why bound": {RunWhy, []string{"data-db-0"}, func() (any, error) {
			return placement.Why(
				ctx,
				c,
				testOperatorNamespace,
				client.ObjectKey{Namespace: "default", Name: "data-db-0"},
			)
		}, func() any { return &WhyReport{} }},
	}
	for name, g := range gather {
		t.Run(name, func(t *testing.T) {
			want, err := g.report()
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			opts := Options{OperatorNamespace: testOperatorNamespace, Namespace: "default", Output: OutputJSON}
			if err := g.run(ctx, c, opts, g.args, &out); err != nil {
				t.Fatal(err)
			}
			assertDecodesTo(t, &out, g.empty(), want)
		})
	}
}

// assertDecodesTo decodes the JSON of r into got, refusing unknown fields, and fails unless it
// equals want.
func assertDecodesTo(t *testing.T, r io.Reader, got, want any) {
	t.Helper()
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded JSON differs from the report:\ngot  %+v\nwant %+v", got, want)
	}
}

// TestCommandErrors checks the messages a user sees when the cluster does not have what they asked
// about, or the API fails.
func TestCommandErrors(t *testing.T) {
	apiDown := errors.New("connection refused")
	failLVMClusters := &interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*lvmv1alpha1.LVMClusterList); ok {
				return apiDown
			}
			return c.List(ctx, list, opts...)
		},
	}
	cases := []struct {
		name   string
		funcs  *interceptor.Funcs
		run    Runner
		args   []string
		output string
		want   string
	}{
		{name: "why of a missing claim", run: RunWhy, args: []string{"nope"},
			want: "PersistentVolumeClaim default/nope not found (use -n for another namespace)"},
		{name: "why without a claim", run: RunWhy, want: "why takes one PersistentVolumeClaim name, got 0 arguments"},
		{name: "disks of a node without lvms", run: RunDisks, args: []string{"control-plane"},
			want: "node control-plane has no LVMVolumeGroupNodeStatus in lvms-system"},
		{name: "unknown output format", run: RunVolumes, output: "wide", want: `unknown output format "wide"`},
		{name: "API error", funcs: failLVMClusters, run: RunStatus,
			want: "list LVMClusters in lvms-system: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newFixtureClient(t, tc.funcs)
			opts := Options{OperatorNamespace: testOperatorNamespace, Namespace: "default", Output: tc.output}
			err := tc.run(context.Background(), c, opts, tc.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if tc.funcs != nil && !errors.Is(err, apiDown) {
				t.Errorf("error %v does not wrap the API error", err)
			}
		})
	}
}

// TestRootCommand checks that the plugin takes kubectl's connection flags and its own, and refuses an
// unknown output format before connecting to any cluster.
func TestRootCommand(t *testing.T) {
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	cmd := NewRootCommand(streams)
	for _, f := range []string{"kubeconfig", "context", "namespace", "server", "operator-namespace", "output"} {
		if cmd.PersistentFlags().Lookup(f) == nil {
			t.Errorf("flag --%s is missing", f)
		}
	}
	if f := cmd.PersistentFlags().Lookup("operator-namespace"); f != nil && f.DefValue != DefaultOperatorNamespace {
		t.Errorf("--operator-namespace defaults to %q", f.DefValue)
	}
	var names []string
	for _, sub := range cmd.Commands() {
		names = append(names, sub.Name())
	}
	for _, want := range []string{"status", "disks", "volumes", "why", "plan", "version"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("subcommand %s is missing from %v", want, names)
		}
	}
	cmd.SetArgs([]string{"status", "-o", "wide", "--server", "https://127.0.0.1:1"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "unknown output format") {
		t.Fatalf("Execute = %v, want the output format refused", err)
	}
	if !strings.Contains(errOut.String(), "unknown output format") {
		t.Errorf("stderr %q does not tell the user", errOut.String())
	}
	cmd = NewRootCommand(streams)
	cmd.SetArgs([]string{"plan", "--server", "https://127.0.0.1:1"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `required flag(s) "filename" not set`) {
		t.Fatalf("plan without -f = %v, want the file asked for", err)
	}
}
