package lvmcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// tableRow asks the API server for one object as a Table, as `kubectl get` does, and returns its
// printer columns by name: this runs the CRDs' JSONPaths on the real server.
func tableRow(ctx context.Context, resource, name string) (map[string]string, error) {
	hc, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("%s/apis/lvm.topolvm.io/v1alpha1/namespaces/%s/%s/%s", strings.TrimSuffix(restCfg.Host, "/"),
		operatorNamespace,
		resource, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: read the body: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s %s", url, resp.Status, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		return nil, fmt.Errorf("decode table of %s/%s: %w", resource, name, err)
	}
	if len(table.Rows) != 1 {
		return nil, fmt.Errorf("table of %s/%s has %d rows", resource, name, len(table.Rows))
	}
	out := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) {
			out[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	return out, nil
}

// expectColumns checks what `kubectl get` prints for the LVMCluster, its one LVMVolumeGroup vg1 and
// the LVMVolumeGroupNodeStatus of node after node reported vg1 as status with reason.
func expectColumns(
	t *testing.T,
	node string,
	status lvmv1alpha1.VGStatusType,
	reason string,
	want lvmv1alpha1.LVMStateType,
	msg string,
) {
	t.Helper()
	ready, nodeReady := "False", "0/1"
	if want == lvmv1alpha1.LVMStatusReady {
		ready = "True"
	}
	if status == lvmv1alpha1.VGStatusReady {
		nodeReady = "1/1"
	}
	checks := []struct {
		resource, name string
		want           map[string]string
		contains       map[string]string
	}{
		{"lvmclusters", "my-lvmcluster", map[string]string{"Status": string(want)},
			map[string]string{"Volume Groups": msg}},
		{"lvmvolumegroups", "vg1", map[string]string{"Ready": ready}, map[string]string{"Message": msg}},
		{"lvmvolumegroupnodestatuses", node, map[string]string{"State": string(status), "Ready": nodeReady},
			map[string]string{"Message": reason}},
	}
	for _, c := range checks {
		eventually(t, "columns of "+c.resource+"/"+c.name, func(ctx context.Context) error {
			row, err := tableRow(ctx, c.resource, c.name)
			if err != nil {
				return err
			}
			for col, v := range c.want {
				if row[col] != v {
					return fmt.Errorf("column %s is %q, want %q (row %v)", col, row[col], v, row)
				}
			}
			for col, v := range c.contains {
				if !strings.Contains(row[col], v) {
					return fmt.Errorf("column %s is %q, want it to contain %q (row %v)", col, row[col], v, row)
				}
			}
			return nil
		})
	}
}
