package dist

import (
	"fmt"
	"os"
	"path/filepath"
)

// InstallFile is the single-file install, relative to the repository root.
const InstallFile = "dist/install.yaml"

// Files renders everything `make dist` writes, keyed by path relative to the repository root.
func Files(o Options) (map[string][]byte, error) {
	inst, err := Render(o.ConfigDir)
	if err != nil {
		return nil, err
	}
	sample, err := os.ReadFile(o.SampleFile)
	if err != nil {
		return nil, fmt.Errorf("read LVMCluster sample: %w", err)
	}
	files := map[string][]byte{
		InstallFile: append(
			[]byte(generatedHeader+"# Install: kubectl apply --server-side -f dist/install.yaml\n"),
			inst.YAML...),
	}
	chart, err := chartFiles(inst, o)
	if err != nil {
		return nil, fmt.Errorf("helm chart: %w", err)
	}
	bundle, err := bundleFiles(inst, o, sample)
	if err != nil {
		return nil, fmt.Errorf("OLM bundle: %w", err)
	}
	monitoring, err := monitoringFiles(o, inst.Namespace)
	if err != nil {
		return nil, fmt.Errorf("monitoring: %w", err)
	}
	for _, m := range []map[string][]byte{chart, bundle, monitoring} {
		for k, v := range m {
			files[k] = v
		}
	}
	return files, nil
}

// Write replaces dist/, the chart and the bundle under root with files, so that a file that is no
// longer rendered disappears too.
func Write(root string, files map[string][]byte) error {
	for _, dir := range []string{filepath.Dir(InstallFile), ChartDir, BundleDir} {
		if err := os.RemoveAll(filepath.Join(root, dir)); err != nil {
			return fmt.Errorf("clean %s: %w", dir, err)
		}
	}
	for _, name := range sortedKeys(files) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(name), err)
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
