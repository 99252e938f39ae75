package dist

// evacuatorContainer runs `lvms evacuator` from the operator's image.
const evacuatorContainer = "evacuator"

// evacuatorComponent is the evacuator (config/components/evacuator at dir) in the chart: the value
// evacuator.enabled. The component adds the Deployment lvms-evacuator, its ServiceAccount and its
// RBAC, and changes nothing of the install. It stays out of the OLM bundle (bundleFiles): a CSV
// runs every Deployment it lists, and OLM has no switch per install to leave one off.
func evacuatorComponent(dir string) Component {
	return Component{
		Dir: dir, Value: "evacuator", Template: "evacuator.yaml",
		Doc: []string{
			"The evacuator (lvms evacuator, config/components/evacuator): it cordons a Node labelled",
			"lvms.topolvm.io/evacuate=true, evicts the pods using the claims on it and moves each claim's",
			"volume to another node (docs/mobility.md). Not part of the OLM bundle.",
		},
	}
}
