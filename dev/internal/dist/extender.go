package dist

// extenderContainer runs `lvms scheduler` from the operator's image.
const extenderContainer = "scheduler"

// extenderComponent is the scheduler extender (config/components/scheduler-extender at dir) in the
// chart: the value schedulerExtender.enabled. The component adds the extender's DaemonSet and
// changes the operator's Deployment (--pod-mutating-webhook) and the mutating webhook
// configuration (the pod webhook).
func extenderComponent(dir string) Component {
	return Component{
		Dir: dir, Value: "schedulerExtender", Template: "scheduler-extender.yaml",
		Doc: []string{
			"The scheduler extender (lvms scheduler) on the control-plane nodes and the operator's pod",
			"webhook (config/components/scheduler-extender); kube-scheduler must be configured to call it",
			"(docs/scheduler-extender.md). Off: pods are placed by CSIStorageCapacity alone.",
		},
	}
}
